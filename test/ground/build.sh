#!/usr/bin/env bash
# build.sh: builds (once) the Kubernetes and etcd binaries of the test ground from the Go
# module proxy and caches them in $CALAF_CACHE/k8s-<version>/bin, and the test ground's
# hostPath provisioner in $CALAF_CACHE/provisioner. A second run only checks the stamp and
# the provisioner's key and returns in well under a second.
#   build.sh            kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
#                       kubectl (one multi-call binary + symlinks), etcd, provisioner
set -euo pipefail
source "$(dirname "$0")/lib.sh"

command -v go >/dev/null || die "go is not installed"

# build_provisioner: test/ground/provisioner (part of the main module); older builds are
# removed. Built with the module's default flags (not static, not trimmed), so that it shares
# the compiled client-go packages with the go test runs of the main module.
build_provisioner() {
  local bin start=$SECONDS
  bin=$(provisioner_bin)
  [[ -x $bin ]] && return 0
  log "building the hostPath provisioner"
  mkdir -p "$(dirname "$bin")"
  rm -f "$(dirname "$bin")"/provisioner-*
  (cd "$REPO_DIR" && GOTOOLCHAIN=local go build -ldflags "-s -w" -o "$bin.new" ./test/ground/provisioner)
  mv "$bin.new" "$bin"
  log "provisioner ready after $((SECONDS - start)) s"
}
build_provisioner

stamp_of() { cat "$GROUND_DIR/kube/go.mod" "$GROUND_DIR/kube/go.sum" "$GROUND_DIR/kube/main.go" \
  "$GROUND_DIR/etcd/go.mod" "$GROUND_DIR/etcd/go.sum" | sha256sum | cut -c1-16; }

# cached: the stamp matches the sources and every binary is there (a binary removed by hand
# or a build cut short is built again).
cached() {
  local name
  [[ -f $BIN_DIR/.stamp && $(cat "$BIN_DIR/.stamp") == "$1" ]] || return 1
  for name in kube etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
    [[ -x $BIN_DIR/$name ]] || return 1
  done
}

want=$(stamp_of)
cached "$want" && exit 0
rm -f "$BIN_DIR/.stamp"

mkdir -p "$BIN_DIR"
export CGO_ENABLED=0 GOFLAGS=-trimpath GOTOOLCHAIN=local
build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

start=$SECONDS
log "building Kubernetes $KUBE_VERSION (one multi-call binary; about 11 min cold on 2 cores)"
(cd "$GROUND_DIR/kube" && go build -ldflags "$ldflags" -o "$BIN_DIR/kube.new" .)
mv "$BIN_DIR/kube.new" "$BIN_DIR/kube"
for name in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  ln -sf kube "$BIN_DIR/$name"
done
log "building etcd $ETCD_VERSION"
(cd "$GROUND_DIR/etcd" && go build -ldflags "-s -w" -o "$BIN_DIR/etcd.new" go.etcd.io/etcd/server/v3)
mv "$BIN_DIR/etcd.new" "$BIN_DIR/etcd"
echo "$want" > "$BIN_DIR/.stamp"
log "binaries ready in $BIN_DIR after $((SECONDS - start)) s"
