#!/usr/bin/env bash
# with-cluster.sh CMD...: starts the one-node cluster, runs CMD with KUBECONFIG (and
# CALAF_E2E_KUBECONFIG) pointing at it, and always stops the cluster again, also when CMD
# fails or is interrupted. Exits with CMD's status; if CMD passed but cluster-down left
# something behind, exits with cluster-down's failure.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

(($# > 0)) || die "usage: with-cluster.sh CMD [ARGS...]"

# shellcheck disable=SC2317 # run by the EXIT trap
down() {
  local rc=$? down_rc=0
  trap - EXIT INT TERM
  "$GROUND_DIR/cluster-down.sh" || down_rc=$?
  if ((rc == 0 && down_rc != 0)); then
    log "the command passed, but cluster-down left something behind"
    rc=$down_rc
  fi
  exit "$rc"
}
trap down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$GROUND_DIR/cluster-up.sh"
export KUBECONFIG=$KUBECONFIG_OUT CALAF_E2E_KUBECONFIG=$KUBECONFIG_OUT
set +e
"$@"
rc=$?
set -e
exit "$rc"
