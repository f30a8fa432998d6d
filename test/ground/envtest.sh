#!/usr/bin/env bash
# envtest.sh: builds the test ground's binaries if needed (cached) and prints the directory
# holding kube-apiserver, etcd and kubectl, for KUBEBUILDER_ASSETS:
#   KUBEBUILDER_ASSETS=$(test/ground/envtest.sh) go test ./...
set -euo pipefail
source "$(dirname "$0")/lib.sh"

"$GROUND_DIR/build.sh" >&2
echo "$BIN_DIR"
