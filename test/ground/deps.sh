#!/usr/bin/env bash
# deps.sh: installs the Debian packages the test ground needs (make, the container runtime,
# CNI plugins, busybox for the workload image, netfilter tools, openssl, ...), and only those
# missing: when all are present it returns at once without touching apt. On a fresh machine,
# where none was ever installed, it installs them all.
#   CALAF_POLICY_RC_D   where Debian's policy-rc.d lives (default /usr/sbin/policy-rc.d;
#                       tests point it elsewhere)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

packages=(
  make                                         # the README's commands
  containerd runc containernetworking-plugins  # container runtime, OCI runtime, bridge/host-local/loopback
  busybox-static                               # the one binary of the calaf.local/busybox image
  iptables ebtables conntrack ethtool socat    # what kubelet and the CNI bridge plugin call
  iproute2 util-linux procps openssl curl      # ip/ss, mount/nsenter/setsid, sysctl, certificates, health checks
  time                                         # GNU time: peak RSS of whole processes in make bench
  python3-openstackclient python3-tackerclient # OpenStack's own client, driving the NFV interfaces in test/e2e
)

# missing_packages: those of $packages that dpkg does not know as "install ok installed", one
# per line. dpkg-query exits 1 when any of them was never installed (the normal case on a
# fresh machine, "no packages found matching ..."), so its status is not an error here.
missing_packages() {
  local status pkg
  status=$(dpkg-query -W -f='${Package}=${Status}\n' "${packages[@]}" 2>/dev/null) || true
  for pkg in "${packages[@]}"; do
    grep -qxF "$pkg=install ok installed" <<<"$status" || echo "$pkg"
  done
}

mapfile -t missing < <(missing_packages)
((${#missing[@]} == 0)) && exit 0

[[ $(id -u) -eq 0 ]] || die "missing Debian packages (${missing[*]}); run as root to install them"
log "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Debian's policy-rc.d is absent on a plain VM; stop the containerd service from starting on
# install: the cluster runs its own containerd with its own config and paths.
policy=${CALAF_POLICY_RC_D:-/usr/sbin/policy-rc.d}
own_policy=false
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=true
fi
trap '$own_policy && rm -f "$policy"' EXIT
apt-get update -qq || die "apt-get update failed (are Debian's mirrors reachable?)"
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
  die "apt-get install ${missing[*]} failed"

mapfile -t still < <(missing_packages)
if ((${#still[@]} > 0)); then
  log "warning: apt-get reported success, but dpkg does not list these as installed: ${still[*]}"
else
  log "Debian packages installed"
fi
