#!/usr/bin/env bash
# Makes the image build's default base from Debian packages (debootstrap), for machines that
# reach Debian's mirror but no image registry: bookworm's minbase with python3, python3-venv and
# ca-certificates, slimmed as Docker's debian:*-slim images are (no documentation but the
# copyright files, no man or info pages, no translations). Elsewhere, point the build at a
# registry's image instead: BASE=docker.io/library/python:3.11-slim make image.
#
# Usage:
#   image/debian-base.sh          make it (replaces an image of the same tag)
#   image/debian-base.sh --tag    print its tag. image/build.sh and .ci/run make the base when
#                                 no image of that tag exists, so the tag changes with what this
#                                 script puts in (TAG below): a base of an older recipe is never
#                                 taken for this one
#
# Needs root, debootstrap and podman (Debian: apt-get install debootstrap podman runc).
# MIRROR: the Debian mirror (default: this machine's, from /etc/apt/sources.list.d/debian.sources
# or /etc/apt/sources.list, else deb.debian.org).
set -euo pipefail

# The recipe's version is the tag's suffix: raise it with any change to what goes in.
# (-2: slimmed; the plain bookworm-minbase before it held 50 MB more of docs and translations)
TAG=localhost/debian:bookworm-minbase-2
case "${1:-}" in
  --tag) echo "$TAG"; exit 0 ;;
  "") ;;
  *) echo "image/debian-base.sh: unknown argument '$1' (--tag, or none)" >&2; exit 2 ;;
esac

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
[ -n "$rootfs" ] && [ "$rootfs" != / ] || { echo "[image] error: no temporary folder" >&2; exit 1; }
start=$SECONDS
log "debootstrap bookworm from $mirror (a minute or two)"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$rootfs" "$mirror" >/dev/null
# what debootstrap leaves of the build machine: the package cache, and its DNS and host name
rm -f "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin
rm -rf "$rootfs"/var/lib/apt/lists/*
: > "$rootfs/etc/resolv.conf"
echo localhost > "$rootfs/etc/hostname"
# Slim, as debuerreotype makes Docker's debian:*-slim: dpkg leaves these paths out of packages
# installed later, and they go from those installed here (about 50 MB, 33 of them translations
# in /usr/share/locale); nothing the image runs reads them.
printf '%s\n' \
  'path-exclude /usr/share/doc/*' \
  'path-include /usr/share/doc/*/copyright' \
  'path-exclude /usr/share/info/*' \
  'path-exclude /usr/share/linda/*' \
  'path-exclude /usr/share/lintian/overrides/*' \
  'path-exclude /usr/share/locale/*' \
  'path-exclude /usr/share/man/*' > "$rootfs/etc/dpkg/dpkg.cfg.d/slim"
find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$rootfs"/usr/share/info/* "$rootfs"/usr/share/linda/* "$rootfs"/usr/share/locale/* \
  "$rootfs"/usr/share/man/* "$rootfs"/usr/share/lintian/overrides/*
rm -f "$rootfs"/var/cache/debconf/*-old
size=$(du -sxm "$rootfs" | cut -f1)
tar --numeric-owner -C "$rootfs" -c . |
  "$container" import --change 'CMD ["/bin/bash"]' - "$TAG" >/dev/null
log "$TAG made in $((SECONDS - start))s: $size MiB"
