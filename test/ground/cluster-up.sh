#!/usr/bin/env bash
# cluster-up.sh: starts the one-node test cluster: containerd, etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kubelet, all on loopback, all state under
# $CALAF_RUN, and the hostPath provisioner of the default StorageClass $STORAGE_CLASS
# (volumes in $VOLUME_DIR). Writes the admin kubeconfig to $KUBECONFIG_OUT and nowhere else;
# imports the test images; returns when the node is Ready and the default ServiceAccount exists.
# On a failure it prints the tail of the failing component's log and stops everything again
# (CALAF_KEEP_FAILED=1 keeps the broken cluster for inspection; cluster-down.sh removes it).
# CALAF_KCM_QPS and CALAF_KCM_BURST set kube-controller-manager's --kube-api-qps and --kube-api-burst
# (default 20 and 30, its own defaults). CALAF_APISERVER_PROFILING=true serves the API server's
# /debug/pprof (for attributing its CPU in a bench; off by default).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
COMPONENTS="containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet provisioner"

t0=$(date +%s%N)
[[ $EUID -eq 0 ]] || die "cluster-up must run as root (containerd, kubelet, mounts, cgroups)"

# --- refuse a second cluster; clear the leftovers of a crashed one -----------------------
for name in $COMPONENTS; do
  pid_alive "$name" && die "a cluster is already up (kubeconfig: $KUBECONFIG_OUT); stop it with make cluster-down"
done
if [[ -e $CALAF_RUN ]]; then
  log "clearing the leftovers of an earlier cluster in $CALAF_RUN"
  "$GROUND_DIR/cluster-down.sh"
fi
for port in 2379 2380 6443 10248 10250 10257 10259; do
  if [[ -n $(ss -Hltn "sport = :$port") ]]; then
    die "port $port is in use by another process (ss -ltnp 'sport = :$port'); the cluster needs it"
  fi
done

# --- packages and binaries (no-ops when present) ------------------------------------------
"$GROUND_DIR/deps.sh"
"$GROUND_DIR/build.sh"
export PATH=$BIN_DIR:$PATH

PKI=$CALAF_RUN/pki
mkdir -p "$PID_DIR" "$LOG_DIR" "$PKI" "$CALAF_RUN/cni/net.d" "$(dirname "$KUBECONFIG_OUT")"

# Remember what cluster-down restores or compares against: the sysctls kubelet changes, the
# veth interfaces and iptables chains that existed before, the fixed host paths that did not.
for key in "${SAVED_SYSCTLS[@]}"; do echo "$key=$(sysctl -n "$key")"; done >"$CALAF_RUN/sysctls.saved"
ip -o link show type veth | awk -F': ' '{print $2}' | cut -d@ -f1 >"$CALAF_RUN/veths.before"
for path in "${HOST_PATHS[@]}"; do [[ -e $path ]] || echo "$path"; done >"$CALAF_RUN/host-paths.created"
for cmd in iptables ip6tables; do
  for table in filter nat mangle; do
    "$cmd-save" -t "$table" 2>/dev/null | sed -n "s/^:\([^ ]*\) .*/$cmd $table \1/p"
  done
done >"$CALAF_RUN/chains.before"

# --- failure handling ----------------------------------------------------------------------
current=""  # the component being waited for; its log is shown on a failure
on_exit() {
  local rc=$?
  ((rc == 0)) && return
  if [[ -n $current && -f $LOG_DIR/$current.log ]]; then
    log "last lines of $LOG_DIR/$current.log:"
    tail -n 40 "$LOG_DIR/$current.log" >&2
  fi
  if [[ ${CALAF_KEEP_FAILED:-} == 1 ]]; then
    log "cluster-up failed; the broken cluster is kept (CALAF_KEEP_FAILED=1): run cluster-down.sh"
  else
    log "cluster-up failed; stopping what was started"
    "$GROUND_DIR/cluster-down.sh" >&2 || true
  fi
  exit "$rc"
}
trap on_exit EXIT

# start NAME CMD...: runs CMD detached in its own session, output in $LOG_DIR/NAME.log,
# its PID in $PID_DIR/NAME.pid.
start() {
  local name=$1
  shift
  setsid "$@" >"$LOG_DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$PID_DIR/$name.pid"
}

# wait_for NAME SECONDS WHAT CMD...: polls CMD until it succeeds; fails when NAME's process
# dies or the time runs out.
wait_for() {
  local name=$1 timeout=$2 what=$3 deadline
  shift 3
  current=$name
  deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    pid_alive "$name" || die "$name exited while waiting for $what"
    ((SECONDS < deadline)) || die "$what: not after $timeout s"
    sleep 0.2
  done
}

# --- certificates --------------------------------------------------------------------------
# An EC P-256 CA and leaf certificates, made anew for each cluster (about 0.1 s in all).
req_config=$'[req]\ndistinguished_name=dn\n[dn]\n'
cert() { # cert NAME SUBJECT EXT_KEY_USAGE [SUBJECT_ALT_NAMES]
  local name=$1 subject=$2 eku=$3 san=${4:-} extra=()
  [[ -n $san ]] && extra=(-addext "subjectAltName=$san")
  openssl req -x509 -config <(echo "$req_config") -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -nodes -keyout "$PKI/$name.key" -out "$PKI/$name.crt" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -subj "$subject" -days 365 -addext basicConstraints=critical,CA:FALSE \
    -addext keyUsage=critical,digitalSignature,keyEncipherment -addext "extendedKeyUsage=$eku" \
    "${extra[@]}" 2>/dev/null
}
make_pki() {
  openssl req -x509 -config <(echo "$req_config") -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -subj /CN=calaf-ground-ca -days 3650 \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
  cert apiserver /CN=kube-apiserver serverAuth \
    "IP:127.0.0.1,IP:${SERVICE_CIDR%.*/*}.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client clientAuth
  cert admin /O=system:masters/CN=calaf-admin clientAuth
  cert controller-manager /CN=system:kube-controller-manager clientAuth
  cert scheduler /CN=system:kube-scheduler clientAuth
  cert kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
  cert kubelet-serving "/CN=$NODE_NAME" serverAuth "IP:$NODE_NAME,DNS:localhost"
  openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null |
    openssl pkcs8 -topk8 -nocrypt -out "$PKI/sa.key"
  openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
  chmod 600 "$PKI"/*.key
}

# kubeconfig FILE USER: a kubeconfig for the certificate pair USER, certificates embedded.
kubeconfig() {
  local file=$1 user=$2
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: calaf-ground
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$user.crt")
    client-key-data: $(base64 -w0 "$PKI/$user.key")
contexts:
- name: calaf-ground
  context: {cluster: calaf-ground, user: $user}
current-context: calaf-ground
EOF
  chmod 600 "$file"
}

log "certificates and kubeconfigs"
make_pki
for user in controller-manager scheduler kubelet-client; do
  kubeconfig "$CALAF_RUN/$user.kubeconfig" "$user"
done
kubeconfig "$CALAF_RUN/admin.kubeconfig" admin

# --- containerd ------------------------------------------------------------------------------
# Its root, state, sockets, runc state, pod network namespaces and CNI config all live under
# $CALAF_RUN. restrict_oom_score_adj: this VM cannot lower oom_score_adj (no CAP_SYS_RESOURCE).
cat >"$CALAF_RUN/cni/net.d/10-$CNI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$CALAF_RUN/cni/networks",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "loopback"}
  ]
}
EOF
cat >"$CALAF_RUN/containerd.toml" <<EOF
version = 2
root = "$CALAF_RUN/containerd/root"
state = "$CALAF_RUN/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$CALAF_RUN/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$CALAF_RUN/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CALAF_RUN/cni/net.d"
    max_conf_num = 1
EOF

log "starting containerd and etcd"
start containerd containerd --config "$CALAF_RUN/containerd.toml"
start etcd etcd --name calaf-ground --data-dir "$CALAF_RUN/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster calaf-ground=http://127.0.0.1:2380 --unsafe-no-fsync --log-level warn
wait_for etcd 30 "etcd health" curl -sf http://127.0.0.1:2379/health

# --- control plane -------------------------------------------------------------------------
log "starting kube-apiserver"
start kube-apiserver kube-apiserver --etcd-servers http://127.0.0.1:2379 \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port 6443 \
  --endpoint-reconciler-type none --authorization-mode Node,RBAC --allow-privileged=true \
  --client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
  --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
  --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP,Hostname \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" --profiling="${CALAF_APISERVER_PROFILING:-false}"

# Images go into containerd while the API server starts.
wait_for containerd 30 "containerd socket" ctr --address "$CONTAINERD_SOCK" version
current=containerd
"$GROUND_DIR/images.sh" import

kubectl() { command kubectl --kubeconfig "$CALAF_RUN/admin.kubeconfig" --request-timeout 5s "$@"; }
wait_for kube-apiserver 60 "kube-apiserver /readyz" \
  curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" https://127.0.0.1:6443/readyz

log "starting kube-controller-manager, kube-scheduler, the provisioner and kubelet"
start kube-controller-manager kube-controller-manager \
  --kubeconfig "$CALAF_RUN/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$CALAF_RUN/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$CALAF_RUN/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port 10257 --leader-elect=false --controllers '*' \
  --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
  --root-ca-file "$PKI/ca.crt" --service-account-private-key-file "$PKI/sa.key" \
  --use-service-account-credentials --service-cluster-ip-range "$SERVICE_CIDR" --profiling=false \
  --flex-volume-plugin-dir "$CALAF_RUN/kubelet/volume-plugins" \
  --kube-api-qps "${CALAF_KCM_QPS:-20}" --kube-api-burst "${CALAF_KCM_BURST:-30}"
start kube-scheduler kube-scheduler --kubeconfig "$CALAF_RUN/scheduler.kubeconfig" \
  --authentication-kubeconfig "$CALAF_RUN/scheduler.kubeconfig" \
  --authorization-kubeconfig "$CALAF_RUN/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false --profiling=false

# Storage: the hostPath provisioner; its StorageClass is created while the controller-manager
# makes the default ServiceAccount (below).
start provisioner "$(provisioner_bin)" -kubeconfig "$CALAF_RUN/admin.kubeconfig" -root "$VOLUME_DIR" \
  -storage-class "$STORAGE_CLASS" -name "$PROVISIONER_NAME" -node "$NODE_NAME"

# kubelet on cgroups v1 with the cgroupfs driver, swap allowed, eviction thresholds low enough
# for a small disk, and image GC off so imported images stay.
mkdir -p "$CALAF_RUN/kubelet"
cat >"$CALAF_RUN/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
clusterDomain: cluster.local
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podLogsDir: $CALAF_RUN/pod-logs
volumePluginDir: $CALAF_RUN/kubelet/volume-plugins
serializeImagePulls: false
EOF
start kubelet kubelet --config "$CALAF_RUN/kubelet.yaml" --kubeconfig "$CALAF_RUN/kubelet-client.kubeconfig" \
  --hostname-override "$NODE_NAME" --root-dir "$CALAF_RUN/kubelet"

node_ready() {
  [[ $(kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}
wait_for kubelet 60 "node $NODE_NAME Ready" node_ready
# The provisioner's StorageClass, the cluster's default one.
current=kube-apiserver
kubectl create -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $STORAGE_CLASS
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: $PROVISIONER_NAME
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
wait_for kube-controller-manager 60 "default ServiceAccount" kubectl -n default get serviceaccount default

for name in $COMPONENTS; do
  current=$name
  pid_alive "$name" || die "$name exited during start-up"
done

# The admin kubeconfig is published last: its presence means the cluster is usable.
install -m 600 "$CALAF_RUN/admin.kubeconfig" "$KUBECONFIG_OUT"
current=""
log "kubeconfig: $KUBECONFIG_OUT (export KUBECONFIG=$KUBECONFIG_OUT)"
printf 'cluster up in %s s\n' "$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN {printf "%.1f", ns / 1e9}')"
