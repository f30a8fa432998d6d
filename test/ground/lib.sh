# lib.sh: shared settings of the Calaf test ground scripts (sourced, not run).
# shellcheck shell=bash disable=SC2034 # settings used by the scripts that source this file
# Everything the test ground builds lives under $CALAF_CACHE, outside the clone;
# everything a running cluster writes lives under $CALAF_RUN.

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
GROUND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$GROUND_DIR/../.." && pwd)
CALAF_CACHE=${CALAF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/calaf}
BIN_DIR=$CALAF_CACHE/k8s-$KUBE_VERSION/bin
IMAGE_DIR=$CALAF_CACHE/images
CALAF_RUN=${CALAF_RUN:-/var/run/calaf-ground}
BUSYBOX_BIN=${CALAF_BUSYBOX_BIN:-/bin/busybox} # from busybox-static: the workload image's one binary
KUBECONFIG_OUT=${CALAF_KUBECONFIG:-$CALAF_RUN/kubeconfig}

log() { printf '[ground %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# No silent exit: a command that fails a script (set -e) is named with its file and line.
# errtrace (-E) carries the trap into functions; inside command substitutions and subshells
# it stays quiet (a failure there that matters fails the command that holds it, named then).
set -E
on_err() {
  local status=$?
  ((BASH_SUBSHELL == 0)) || return "$status"
  log "error: ${BASH_SOURCE[1]##*/}:$1: \"$2\" failed with status $status"
}
trap 'on_err "$LINENO" "$BASH_COMMAND"' ERR

# Node mode (cluster-up.sh / cluster-down.sh): fixed names, ports and address ranges.
PAUSE_IMAGE=calaf.local/pause:1      # must equal containerd's sandbox_image
BUSYBOX_IMAGE=calaf.local/busybox:1  # busybox-only workload image for end-to-end tests
# Further names of that image: the examples' default image input, as containerd normalizes it.
BUSYBOX_ALIASES=(docker.io/library/busybox:1.36)
OPERATOR_IMAGE=calaf.local/calaf:dev # built from a calaf binary by `images.sh operator BINARY`
STORAGE_CLASS=calaf-local            # the default StorageClass; its claims get hostPath volumes
PROVISIONER_NAME=ground.calaf.io/hostpath # its provisioner (test/ground/provisioner)
VOLUME_DIR=$CALAF_RUN/volumes        # one directory per provisioned volume
NODE_NAME=127.0.0.1                  # kubelet --hostname-override: the node's name and address
CNI_NETWORK=calaf-ground             # CNI network name (prefix of its result files)
CNI_BRIDGE=calaf0                    # the bridge the CNI plugin creates for pods
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
CONTAINERD_SOCK=$CALAF_RUN/containerd/containerd.sock
PID_DIR=$CALAF_RUN/pids
LOG_DIR=$CALAF_RUN/logs
# Host sysctls kubelet and the bridge plugin change; saved at start, restored at stop.
SAVED_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward)
# Fixed host paths that kubelet, containerd and CNI create whatever they are configured with;
# those absent before cluster-up are removed by cluster-down.
HOST_PATHS=(/var/lib/kubelet /var/log/containers /var/lib/cni /run/containerd /usr/libexec/kubernetes)

# pid_alive NAME: true when the process recorded as NAME still runs (a zombie does not count:
# killed components stay zombies until init reaps them).
pid_alive() {
  local f=$PID_DIR/$1.pid
  [[ -f $f ]] && grep -qs '^State:[[:space:]]*[^Z]' "/proc/$(cat "$f")/status"
}

# provisioner_bin: the path of the cached provisioner binary for the current sources (build.sh
# builds it). Keyed by its sources, the Kubernetes module versions in go.mod and the Go version.
provisioner_bin() {
  local key
  key=$({
    for f in "$GROUND_DIR"/provisioner/*.go; do [[ $f == *_test.go ]] || cat "$f"; done
    grep -E '^[[:space:]]*k8s\.io/' "$REPO_DIR/go.mod"
    go env GOVERSION GOARCH
  } | sha256sum | cut -c1-16)
  echo "$CALAF_CACHE/provisioner/provisioner-$key"
}

# cluster_running: the cluster of $CALAF_RUN is up: its kubeconfig is published and its
# components run (a kubeconfig left by a crashed or rebooted machine does not count).
cluster_running() {
  local name
  [[ -f $KUBECONFIG_OUT ]] || return 1
  for name in containerd etcd kube-apiserver kubelet; do
    pid_alive "$name" || return 1
  done
}
