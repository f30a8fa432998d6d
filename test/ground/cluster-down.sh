#!/usr/bin/env bash
# cluster-down.sh: stops the one-node test cluster started by cluster-up.sh and removes every
# trace of it: its processes (only those recorded by PID), container tasks and shims, mounts,
# the CNI bridge and veths, the kubepods cgroups, kubelet's iptables chains, the fixed host
# paths it created, the host sysctls it changed, and $CALAF_RUN. Then it checks that nothing
# is left and exits non-zero listing what is. The component logs are kept in
# $CALAF_CACHE/last-cluster-logs. The provisioner's volumes live in $CALAF_RUN and go with it.
# Safe to run when no cluster is up.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

[[ $EUID -eq 0 ]] || die "cluster-down must run as root"
RUN_REAL=$(readlink -m "$CALAF_RUN") # /var/run is a symlink: mounts show the real path
TASK_DIR=$CALAF_RUN/containerd/state/io.containerd.runtime.v2.task
ctr=(ctr --address "$CONTAINERD_SOCK" --namespace k8s.io --timeout 10s)

# What cluster-up recorded before starting anything ("-" when there is no record: then the
# veths and iptables chains of the host are not checked, since none can be told apart).
veths_before=- chains_before=- created_paths=()
[[ -f $CALAF_RUN/veths.before ]] && veths_before=$(cat "$CALAF_RUN/veths.before")
[[ -f $CALAF_RUN/chains.before ]] && chains_before=$(cat "$CALAF_RUN/chains.before")
[[ -f $CALAF_RUN/host-paths.created ]] && mapfile -t created_paths <"$CALAF_RUN/host-paths.created"

# is_running PID WORD: PID is alive and its command line contains WORD (guards against PID reuse).
is_running() {
  local cmd
  cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline") && [[ $cmd == *"$2"* ]]
}

# terminate PID WORD GRACE: SIGTERM, up to GRACE seconds to exit, then SIGKILL.
terminate() {
  local pid=$1 word=$2 grace=$3 i
  is_running "$pid" "$word" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    is_running "$pid" "$word" || return 0
    sleep 0.1
  done
  log "$word ($pid) ignored SIGTERM for $grace s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    is_running "$pid" "$word" || return 0
    sleep 0.1
  done
}

# stop NAME [GRACE]: ends the component recorded in $PID_DIR/NAME.pid.
stop() {
  local name=$1 grace=${2:-10} file=$PID_DIR/$1.pid
  [[ -f $file ]] || return 0
  terminate "$(cat "$file")" "$name" "$grace"
  rm -f "$file"
}

# mounts_under DIR: the mount points at or below DIR, deepest first.
mounts_under() {
  findmnt -rn -o TARGET | awk -v d="$1" '$0 == d || index($0, d "/") == 1' | sort -r
}

# unmount_under DIR: unmounts everything at or below DIR (stacked mounts take several rounds).
unmount_under() {
  local target
  for _ in 1 2 3 4 5; do
    mapfile -t targets < <(mounts_under "$1")
    ((${#targets[@]} > 0)) || return 0
    for target in "${targets[@]}"; do
      umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || true
    done
  done
}

# new_chains CMD TABLE: the KUBE-* chains of an iptables table that cluster-up did not see.
new_chains() {
  [[ $chains_before != - ]] || return 0
  "$1-save" -t "$2" 2>/dev/null | sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p' | while read -r chain; do
    grep -qxF "$1 $2 $chain" <<<"$chains_before" || echo "$chain"
  done
}

# --- processes -------------------------------------------------------------------------------
# kubelet first, so that it restarts nothing that is being removed.
stop kubelet 15
stop kube-scheduler
stop kube-controller-manager
stop provisioner

# Pod containers: killed and deleted through containerd while it still runs.
if [[ -f $PID_DIR/containerd.pid ]] && is_running "$(cat "$PID_DIR/containerd.pid")" containerd; then
  for task in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
    "${ctr[@]}" tasks kill --signal SIGKILL "$task" >/dev/null 2>&1 || true
  done
  for task in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
    "${ctr[@]}" tasks delete --force "$task" >/dev/null 2>&1 || true
  done
fi
stop containerd

# Whatever survived (after a crash of containerd): container init processes, by the PIDs
# containerd recorded, and the shims serving our containerd socket (containerd 1.6 records
# no shim PID; a shim's command line names the socket).
for file in "$TASK_DIR"/*/*/init.pid; do
  [[ -f $file ]] || continue
  pid=$(cat "$file")
  if grep -qs kubepods "/proc/$pid/cgroup"; then kill -KILL "$pid" 2>/dev/null || true; fi
done
for proc in /proc/[0-9]*; do
  cmd=$(tr '\0' ' ' 2>/dev/null <"$proc/cmdline") || continue
  if [[ $cmd == *containerd-shim*" -address $CONTAINERD_SOCK "* ]]; then
    terminate "${proc#/proc/}" containerd-shim 2
  fi
done

stop kube-apiserver
stop etcd
# The control planes remote.sh started beside the node, if any (their logs join the node's).
for remote in remote remote2; do
  if [[ -d $CALAF_RUN/$remote ]]; then "$GROUND_DIR/remote.sh" down "$remote"; fi
done

# --- mounts, network, cgroups ------------------------------------------------------------------
unmount_under "$RUN_REAL"

# Pod veths vanish with their network namespaces; delete any still on the bridge, then it.
for link in $(ip -o link show master "$CNI_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
  ip link delete "$link" 2>/dev/null || true
done
if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then ip link delete "$CNI_BRIDGE"; fi

# kubelet's iptables chains (KUBE-FIREWALL, KUBE-KUBELET-CANARY, ...): the rules jumping to
# them, then the chains; chains that existed before cluster-up stay.
for cmd in iptables ip6tables; do
  for table in filter nat mangle; do
    mapfile -t chains < <(new_chains "$cmd" "$table")
    ((${#chains[@]} > 0)) || continue
    {
      echo "*$table"
      for chain in "${chains[@]}"; do
        "$cmd-save" -t "$table" | grep -E -- "^-A .* -j $chain( |\$)" | sed 's/^-A /-D /' || true
      done
      printf -- '-F %s\n' "${chains[@]}"
      printf -- '-X %s\n' "${chains[@]}"
      echo COMMIT
    } | "$cmd-restore" --noflush || log "could not remove $cmd $table chains: ${chains[*]}"
  done
done

# cgroups kubelet created with the cgroupfs driver, in every v1 hierarchy (and the v2 one).
for cg in /sys/fs/cgroup/*/kubepods; do
  if [[ -d $cg ]]; then find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true; fi
done

# --- files outside $CALAF_RUN ------------------------------------------------------------------
# In fixed host paths: our CNI results and pod log links where the path existed before, the
# whole path where cluster-up found it absent.
for dir in "$CALAF_RUN"/containerd/root/io.containerd.grpc.v1.cri/sandboxes/*/; do
  [[ -d $dir ]] && rm -f /var/lib/cni/results/*-"$(basename "$dir")"-*
done
for link in /var/log/containers/*.log; do
  if [[ -L $link && $(readlink -m "$link") == "$RUN_REAL"/* ]]; then rm -f "$link"; fi
done
for path in "${created_paths[@]}"; do
  unmount_under "$path"
  rm -rf --one-file-system "$path"
done

# A kubeconfig written outside $CALAF_RUN (CALAF_KUBECONFIG), if it is ours.
if [[ -f $KUBECONFIG_OUT ]] && grep -q '^- name: calaf-ground$' "$KUBECONFIG_OUT"; then
  rm -f "$KUBECONFIG_OUT"
fi

# Host sysctls back to their values before cluster-up.
if [[ -f $CALAF_RUN/sysctls.saved ]]; then
  while IFS= read -r setting; do sysctl -q -w "$setting" || true; done <"$CALAF_RUN/sysctls.saved"
fi

# The logs go to the cache; $CALAF_RUN goes (--one-file-system: never into a surviving mount).
if [[ -d $LOG_DIR ]]; then
  mkdir -p "$CALAF_CACHE"
  rm -rf "$CALAF_CACHE/last-cluster-logs"
  cp -r "$LOG_DIR" "$CALAF_CACHE/last-cluster-logs"
fi
if [[ -e $CALAF_RUN ]]; then rm -rf --one-file-system "$CALAF_RUN"; fi

# --- verify ------------------------------------------------------------------------------------
leftovers=()
# This script's callers may name $CALAF_RUN in their arguments (with-cluster.sh CMD...): they
# are no leftovers.
callers=" "
for ((pid = $$; pid > 1; )); do
  callers+="$pid "
  pid=$(awk '$1 == "PPid:" {print $2}' "/proc/$pid/status" 2>/dev/null) || break
  [[ -n $pid ]] || break
done
for proc in /proc/[0-9]*; do
  [[ $callers == *" ${proc#/proc/} "* ]] && continue
  cmd=$(tr '\0' ' ' 2>/dev/null <"$proc/cmdline") || continue
  if [[ $cmd == *"$CALAF_RUN"* || $cmd == *"$RUN_REAL"* ]] || grep -qs ':/kubepods' "$proc/cgroup"; then
    leftovers+=("process ${proc#/proc/}: ${cmd:0:120}")
  fi
done
while IFS= read -r target; do
  leftovers+=("mount $target")
done < <(mounts_under "$RUN_REAL")
if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then leftovers+=("interface $CNI_BRIDGE"); fi
if [[ $veths_before != - ]]; then
  for veth in $(ip -o link show type veth | awk -F': ' '{print $2}' | cut -d@ -f1); do
    grep -qxF "$veth" <<<"$veths_before" || leftovers+=("interface $veth")
  done
fi
for cmd in iptables ip6tables; do
  for table in filter nat mangle; do
    for chain in $(new_chains "$cmd" "$table"); do leftovers+=("$cmd chain $table/$chain"); done
  done
done
for cg in /sys/fs/cgroup/*/kubepods; do
  if [[ -d $cg ]]; then leftovers+=("cgroup $cg"); fi
done
for path in "${created_paths[@]}" "$CALAF_RUN"; do
  if [[ -e $path ]]; then leftovers+=("path $path"); fi
done

if ((${#leftovers[@]} > 0)); then
  log "cluster-down left these behind:"
  printf '  %s\n' "${leftovers[@]}" >&2
  exit 1
fi
log "cluster down, nothing left behind (logs: $CALAF_CACHE/last-cluster-logs)"
