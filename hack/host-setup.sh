#!/usr/bin/env bash
# Prepares the host's kernel state the tests rely on. Idempotent.
#
# 1. favordynmods on the cgroup2 mount. Moving a process into a cgroup
#    (every container start writes cgroup.procs, in each v1 hierarchy on a
#    hybrid host) takes the kernel's global cgroup_threadgroup_rwsem for
#    writing. Without favordynmods the lock is a per-CPU rwsem kept
#    reader-optimised, and the first writer after a quiet spell waits an RCU
#    grace period: 8-20 ms added to a container start. favordynmods (Linux
#    >= 6.0) keeps the lock writer-ready, at a small cost to fork and exit.
#    The rwsem is shared by all hierarchies, so setting it on the cgroup2
#    mount (at /sys/fs/cgroup/unified on hybrid hosts) speeds up v1
#    migrations too. It is a host-wide trade-off, so it is made here, by
#    the host's owner, and not by the kubelet at start.
# 2. crun refuses to run on a cgroup v1 "hybrid" host (v1 hierarchies,
#    cgroup2 at /sys/fs/cgroup/unified) while the cgroup2 tree holds a
#    controller. Hosts that mount a v1 hierarchy for every controller but
#    hugetlb leave hugetlb there; mounting a v1 hierarchy for it frees
#    cgroup2. Doing it once here, instead of inside a test, keeps test
#    packages that run in parallel from seeing the set of v1 hierarchies
#    change under them.
set -euo pipefail
root=/sys/fs/cgroup
unified=$root/unified

favor_dynmods() {
  local mnt=$1
  [ "$(findmnt -no FSTYPE "$mnt" 2>/dev/null)" = cgroup2 ] || return 0
  if findmnt -no OPTIONS "$mnt" | tr ',' '\n' | grep -qx favordynmods; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "host-setup: need root to remount $mnt with favordynmods" >&2
    return 0
  fi
  # mount(8) keeps the mount's current options and adds this one; kernels
  # older than 6.0 reject it, which only costs the optimisation.
  if mount -o remount,favordynmods "$mnt" 2>/dev/null; then
    echo "host-setup: remounted $mnt with favordynmods (no RCU grace period on cgroup migrations)"
  else
    echo "host-setup: this kernel does not support favordynmods on $mnt; container starts may wait for cgroup migrations" >&2
  fi
}
if [ -f "$unified/cgroup.controllers" ]; then
  favor_dynmods "$unified"
elif [ -f "$root/cgroup.controllers" ]; then
  favor_dynmods "$root"
fi

[ -f "$unified/cgroup.controllers" ] || exit 0
ctrls=$(cat "$unified/cgroup.controllers")
[ -n "$ctrls" ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "host-setup: need root to mount v1 hierarchies for: $ctrls" >&2
  exit 1
fi
ro=0
if findmnt -no OPTIONS "$root" | tr ',' '\n' | grep -qx ro; then
  ro=1
  mount -o remount,rw "$root"
fi
for c in $ctrls; do
  if ! findmnt -n "$root/$c" >/dev/null 2>&1; then
    mkdir -p "$root/$c"
    mount -t cgroup -o "$c" cgroup "$root/$c"
    echo "host-setup: mounted the v1 $c hierarchy at $root/$c (crun needs an empty cgroup2 on hybrid hosts)"
  fi
done
if [ "$ro" = 1 ]; then
  mount -o remount,ro "$root"
fi
