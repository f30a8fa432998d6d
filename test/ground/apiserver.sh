#!/usr/bin/env bash
# apiserver.sh stop|start: an API server outage on the running one-node cluster, for tests.
#   apiserver.sh stop    stops kube-apiserver (SIGTERM, then SIGKILL after 10 s), keeping its
#                        command line in $CALAF_RUN/kube-apiserver.cmdline
#   apiserver.sh start   starts it again with that command line and returns when it is ready
# Everything else of the cluster keeps running; cluster-down.sh stops the new process.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

[[ $EUID -eq 0 ]] || die "apiserver.sh must run as root, as the cluster does"
saved=$CALAF_RUN/kube-apiserver.cmdline

stop_apiserver() {
  pid_alive kube-apiserver || die "no kube-apiserver runs (is a cluster up?)"
  local pid i
  pid=$(cat "$PID_DIR/kube-apiserver.pid")
  cp "/proc/$pid/cmdline" "$saved"
  kill -TERM "$pid"
  for ((i = 0; i < 100; i++)); do
    pid_alive kube-apiserver || return 0
    sleep 0.1
  done
  log "kube-apiserver ($pid) ignored SIGTERM for 10 s; killing it"
  kill -KILL "$pid"
}

start_apiserver() {
  [[ -f $saved ]] || die "no saved command line: stop kube-apiserver with apiserver.sh stop first"
  pid_alive kube-apiserver && die "kube-apiserver runs already"
  local args i
  mapfile -d '' args <"$saved"
  args[0]=$BIN_DIR/kube-apiserver
  setsid "${args[@]}" >>"$LOG_DIR/kube-apiserver.log" 2>&1 </dev/null &
  echo $! >"$PID_DIR/kube-apiserver.pid"
  rm -f "$saved"
  for ((i = 0; i < 600; i++)); do
    if curl -sf --cacert "$CALAF_RUN/pki/ca.crt" --cert "$CALAF_RUN/pki/admin.crt" --key "$CALAF_RUN/pki/admin.key" \
      https://127.0.0.1:6443/readyz >/dev/null 2>&1; then
      return 0
    fi
    pid_alive kube-apiserver || die "kube-apiserver exited while starting; see $LOG_DIR/kube-apiserver.log"
    sleep 0.1
  done
  die "kube-apiserver not ready after 60 s; see $LOG_DIR/kube-apiserver.log"
}

case ${1:-} in
  stop) stop_apiserver ;;
  start) start_apiserver ;;
  *) die "usage: apiserver.sh stop|start" ;;
esac
