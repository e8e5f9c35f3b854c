#!/usr/bin/env bash
# Installs the Debian packages podkit's tests need. Idempotent: does nothing
# when everything is present.
set -euo pipefail
pkgs=()
need() { dpkg -s "$1" >/dev/null 2>&1 || pkgs+=("$1"); }
need ca-certificates
need iproute2
# image: skopeo is the peer of the pull benchmark
need skopeo
# cni: the reference CNI plugins (bridge, host-local, loopback) for the libcni adapter tests
need containernetworking-plugins
# sandbox: the OCI runtimes behind sandbox/oci, and busybox for shell-based test images
need runc
need crun
need busybox-static
# apiserver/storage/etcd: the etcd server its tests start on 127.0.0.1 (etcdtest)
need etcd-server
if [ ${#pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to install: ${pkgs[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${pkgs[@]}"
fi
# etcd-server enables a system etcd on 127.0.0.1:2379; tests run their own
# on free ports, so keep the system one stopped and disabled.
if dpkg -s etcd-server >/dev/null 2>&1; then
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now etcd >/dev/null 2>&1 || true
  elif command -v service >/dev/null 2>&1; then
    service etcd stop >/dev/null 2>&1 || true
  fi
fi
