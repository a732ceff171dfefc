#!/usr/bin/env bash
# Makes localhost/debian:bookworm-minbase, the image build's default base, from Debian packages
# (debootstrap), for machines that reach Debian's mirror but no image registry. Elsewhere, point
# the build at a registry's image instead: BASE=docker.io/library/python:3.11-slim make image.
#
# Needs root, debootstrap and podman (Debian: apt-get install debootstrap podman runc).
# MIRROR: the Debian mirror (default: this machine's, from /etc/apt/sources.list.d/debian.sources
# or /etc/apt/sources.list, else deb.debian.org).
set -euo pipefail

container=${CONTAINER:-podman}
log() { printf '[image] %s\n' "$*" >&2; }
command -v debootstrap >/dev/null ||
  { echo "[image] error: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
mirror=${MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
fi
if [ -z "$mirror" ]; then
  mirror=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) bookworm .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -1)
fi
mirror=${mirror:-http://deb.debian.org/debian}

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
start=$SECONDS
log "debootstrap bookworm from $mirror (a minute or two)"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$rootfs" "$mirror" >/dev/null
# what debootstrap leaves of the build machine: the package cache, and its DNS and host name
rm -f "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin
rm -rf "$rootfs"/var/lib/apt/lists/*
: > "$rootfs/etc/resolv.conf"
echo localhost > "$rootfs/etc/hostname"
tar --numeric-owner -C "$rootfs" -c . |
  "$container" import --change 'CMD ["/bin/bash"]' - localhost/debian:bookworm-minbase >/dev/null
log "localhost/debian:bookworm-minbase made in $((SECONDS - start))s"
