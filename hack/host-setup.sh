#!/usr/bin/env bash
# Prepares the host's kernel state the tests rely on. Idempotent.
#
# crun refuses to run on a cgroup v1 "hybrid" host (v1 hierarchies, cgroup2
# at /sys/fs/cgroup/unified) while the cgroup2 tree holds a controller.
# Hosts that mount a v1 hierarchy for every controller but hugetlb leave
# hugetlb there; mounting a v1 hierarchy for it frees cgroup2. Doing it once
# here, instead of inside a test, keeps test packages that run in parallel
# from seeing the set of v1 hierarchies change under them.
set -euo pipefail
root=/sys/fs/cgroup
unified=$root/unified
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
