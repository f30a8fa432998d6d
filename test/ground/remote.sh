#!/usr/bin/env bash
# remote.sh up|down|stop|start [NAME]: a second cluster for tests — a control plane alone
# (etcd, kube-apiserver and the garbage collector; no node, no other controller), standing
# for a cluster Services deploy into — beside the one-node cluster, on ports of its own.
#   remote.sh up [NAME]     starts it (once: a second up is a no-op) and prints its admin
#                           kubeconfig's path, $CALAF_RUN/NAME/kubeconfig
#   remote.sh stop [NAME]   kills its kube-apiserver (an outage), keeping its command line
#   remote.sh start [NAME]  starts that kube-apiserver again and returns once it is ready
#   remote.sh down [NAME]   stops it and removes every trace of it (cluster-down.sh does)
# NAME is "remote" (the default; API server on 127.0.0.1:16443, etcd 12379/12380) or
# "remote2" (16444, etcd 12381/12382). Its certificates are its own (a CA of its own).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

[[ $EUID -eq 0 ]] || die "remote.sh must run as root, as the cluster does ($CALAF_RUN)"
action=${1:-}
name=${2:-remote}
case $name in
  remote) api_port=16443 etcd_port=12379 peer_port=12380 service_cidr=10.97.0.0/16 ;;
  remote2) api_port=16444 etcd_port=12381 peer_port=12382 service_cidr=10.98.0.0/16 ;;
  *) die "unknown remote cluster $name (remote or remote2)" ;;
esac
dir=$CALAF_RUN/$name
pki=$dir/pki
pids=$dir/pids
logs=$dir/logs
saved=$dir/kube-apiserver.cmdline

alive() { # alive COMPONENT: its recorded process runs (a zombie does not count)
  local f=$pids/$1.pid
  [[ -f $f ]] && grep -qs '^State:[[:space:]]*[^Z]' "/proc/$(cat "$f")/status"
}

launch() { # launch COMPONENT CMD...: detached, output in $logs/COMPONENT.log
  local component=$1
  shift
  setsid "$@" >>"$logs/$component.log" 2>&1 </dev/null &
  echo $! >"$pids/$component.pid"
}

ready() {
  curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1
}

wait_ready() {
  local i
  for ((i = 0; i < 600; i++)); do
    ready && return 0
    alive kube-apiserver || die "$name: kube-apiserver exited while starting; see $logs/kube-apiserver.log"
    sleep 0.1
  done
  die "$name: kube-apiserver not ready after 60 s; see $logs/kube-apiserver.log"
}

make_pki() {
  local conf=$'[req]\ndistinguished_name=dn\n[dn]\n'
  mkdir -p "$pki"
  openssl req -x509 -config <(echo "$conf") -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" -subj "/CN=calaf-ground-$name-ca" -days 3650 \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
  leaf() { # leaf NAME SUBJECT EKU [SAN]
    local extra=()
    [[ -n ${4:-} ]] && extra=(-addext "subjectAltName=$4")
    openssl req -x509 -config <(echo "$conf") -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$pki/$1.key" -out "$pki/$1.crt" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -subj "$2" -days 365 \
      -addext basicConstraints=critical,CA:FALSE -addext keyUsage=critical,digitalSignature,keyEncipherment \
      -addext "extendedKeyUsage=$3" "${extra[@]}" 2>/dev/null
  }
  leaf apiserver /CN=kube-apiserver serverAuth "IP:127.0.0.1,DNS:localhost,DNS:$name.calaf-ground.test"
  leaf admin /O=system:masters/CN=calaf-admin clientAuth
  openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$pki/sa.key"
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
  chmod 600 "$pki"/*.key
}

write_kubeconfig() {
  cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(base64 -w0 "$pki/admin.crt")
    client-key-data: $(base64 -w0 "$pki/admin.key")
contexts:
- name: $name
  context: {cluster: $name, user: admin}
current-context: $name
EOF
  chmod 600 "$dir/kubeconfig"
}

up() {
  if alive etcd && alive kube-apiserver && [[ -f $dir/kubeconfig ]]; then
    echo "$dir/kubeconfig"
    return 0
  fi
  [[ -e $dir ]] && down
  for port in $api_port $etcd_port $peer_port; do
    [[ -z $(ss -Hltn "sport = :$port") ]] || die "port $port is in use (ss -ltnp 'sport = :$port'); $name needs it"
  done
  "$GROUND_DIR/build.sh" >&2
  mkdir -p "$pids" "$logs"
  make_pki
  launch etcd "$BIN_DIR/etcd" --name "$name" --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "$name=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level warn
  local i
  for ((i = 0; i < 300; i++)); do
    curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1 && break
    alive etcd || die "$name: etcd exited while starting; see $logs/etcd.log"
    sleep 0.1
  done
  launch kube-apiserver "$BIN_DIR/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --endpoint-reconciler-type none --authorization-mode RBAC \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --service-account-issuer "https://$name.calaf-ground.test" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range "$service_cidr" --profiling=false
  wait_ready
  write_kubeconfig
  # The garbage collector alone of the controllers: deletions that wait for dependents
  # (foreground) end, as in any cluster; nothing else acts on the objects.
  launch kube-controller-manager "$BIN_DIR/kube-controller-manager" --kubeconfig "$dir/kubeconfig" \
    --controllers garbagecollector --leader-elect=false --secure-port 0 --profiling=false
  echo "$dir/kubeconfig"
}

stop_apiserver() {
  alive kube-apiserver || die "$name: no kube-apiserver runs (is it up?)"
  local pid i
  pid=$(cat "$pids/kube-apiserver.pid")
  cp "/proc/$pid/cmdline" "$saved"
  # An outage, not a graceful shutdown: kube-apiserver waits for its watches to end on
  # SIGTERM, which outlasts any test's patience.
  kill -KILL "$pid"
  for ((i = 0; i < 100; i++)); do
    alive kube-apiserver || return 0
    sleep 0.1
  done
  die "$name: kube-apiserver ($pid) still runs 10 s after SIGKILL"
}

start_apiserver() {
  [[ -f $saved ]] || die "$name: no saved command line: stop its kube-apiserver first"
  alive kube-apiserver && die "$name: kube-apiserver runs already"
  local args
  mapfile -d '' args <"$saved"
  launch kube-apiserver "${args[@]}"
  rm -f "$saved"
  wait_ready
}

down() {
  local component pid i
  for component in kube-controller-manager kube-apiserver etcd; do
    [[ -f $pids/$component.pid ]] || continue
    pid=$(cat "$pids/$component.pid")
    if alive "$component" && [[ $(tr '\0' ' ' <"/proc/$pid/cmdline") == *"$component"* ]]; then
      kill -TERM "$pid" 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do
        alive "$component" || break
        sleep 0.1
      done
      alive "$component" && kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  if [[ -d $LOG_DIR && -d $logs ]]; then
    for log in "$logs"/*.log; do
      [[ -f $log ]] && cp "$log" "$LOG_DIR/$name-$(basename "$log")"
    done
  fi
  rm -rf "$dir"
}

case $action in
  up) up ;;
  stop) stop_apiserver ;;
  start) start_apiserver ;;
  down) down ;;
  *) die "usage: remote.sh up|down|stop|start [remote|remote2]" ;;
esac
