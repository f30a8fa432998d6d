#!/usr/bin/env bash
# deps.sh: installs the Debian packages the one-node cluster needs (container runtime, CNI
# plugins, busybox for the workload image, netfilter tools, openssl), and only those missing:
# when all are present it returns at once without touching apt.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

packages=(
  containerd runc containernetworking-plugins # container runtime, OCI runtime, bridge/host-local/loopback
  busybox-static                              # the one binary of the calaf.local/busybox image
  iptables ebtables conntrack ethtool socat    # what kubelet and the CNI bridge plugin call
  iproute2 util-linux openssl curl             # ip, mount/nsenter, certificates, health checks
)

# A package counts as present when dpkg says "install ok installed" (one dpkg-query call).
installed=" $(dpkg-query -W -f='${Package}=${Status}\n' "${packages[@]}" 2>/dev/null \
  | sed -n 's/=install ok installed$//p' | tr '\n' ' ') "
missing=()
for pkg in "${packages[@]}"; do
  [[ $installed == *" $pkg "* ]] || missing+=("$pkg")
done
((${#missing[@]} == 0)) && exit 0

[[ $EUID -eq 0 ]] || die "missing Debian packages (${missing[*]}); run as root to install them"
log "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Debian's policy-rc.d is absent on a plain VM; stop the containerd service from starting
# on install: the cluster runs its own containerd with its own config and paths.
policy=/usr/sbin/policy-rc.d
own_policy=false
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && own_policy=true
fi
trap '$own_policy && rm -f "$policy"' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
log "Debian packages installed"
