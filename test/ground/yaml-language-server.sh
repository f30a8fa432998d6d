#!/usr/bin/env bash
# yaml-language-server.sh: installs yaml-language-server, the YAML language server that
# editors run (from the npm registry, with the machine's Node.js and npm), into
# $CALAF_CACHE/tools/yaml-language-server-VERSION once, and prints the path of its
# executable. test/e2e checks the JSON Schema of `calaf profile schema` with it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# 1.x: 2.0 needs Node.js 22, the machine has 20.
version=1.19.2
dir=$CALAF_CACHE/tools/yaml-language-server-$version
server=$dir/node_modules/yaml-language-server/bin/yaml-language-server

if [[ ! -f $server ]]; then
  command -v npm >/dev/null || die "npm is missing: yaml-language-server is installed from the npm registry with Node.js's npm"
  command -v node >/dev/null || die "node is missing: yaml-language-server runs on Node.js"
  log "installing yaml-language-server $version from npm into $dir, once"
  rm -rf "$dir.new"
  mkdir -p "$dir.new"
  npm install --prefix "$dir.new" --no-audit --no-fund --no-save --loglevel=error "yaml-language-server@$version" >&2 ||
    die "npm install yaml-language-server@$version failed (is the npm registry reachable?)"
  [[ -f $dir.new/node_modules/yaml-language-server/bin/yaml-language-server ]] ||
    die "npm installed yaml-language-server@$version without its bin/yaml-language-server"
  rm -rf "$dir"
  mv "$dir.new" "$dir"
fi
echo "$server"
