#!/usr/bin/env bash
# with-cluster.sh CMD...: starts the one-node cluster, runs CMD with KUBECONFIG (and
# CALAF_E2E_KUBECONFIG) pointing at it, and always stops the cluster again, also when CMD
# fails or this script is interrupted (SIGINT/SIGTERM are passed on to CMD). Exits with
# CMD's status; if CMD passed but cluster-down left something behind, with cluster-down's.
# Callers take turns: a second one waits until the first one's cluster is down.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

(($# > 0)) || die "usage: with-cluster.sh CMD [ARGS...]"

# One cluster at a time (fixed ports and host paths): a second caller waits for the first.
lock=$CALAF_RUN.lock
exec {lock_fd}>"$lock"
if ! flock -n "$lock_fd"; then
  log "another with-cluster.sh holds $lock; waiting for it"
  flock "$lock_fd"
fi

# shellcheck disable=SC2317 # run by the EXIT trap
down() {
  local rc=$? down_rc=0
  trap - EXIT
  trap '' INT TERM # the clean-up itself runs to its end
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

# CMD runs in the background so that a signal reaches this script at once; it is passed on,
# and the script waits for CMD to end before stopping the cluster.
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null || true' INT TERM
rc=0
wait "$child" || rc=$?
while kill -0 "$child" 2>/dev/null; do # wait returned early for a signal
  rc=0
  wait "$child" || rc=$?
done
exit "$rc"
