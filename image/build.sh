#!/usr/bin/env bash
# Builds the container image (the Containerfile at the top of the repository) with podman (or
# docker: CONTAINER=docker) and tags it localhost/lb-reconciler:<version> and :dev.
#
# The build context is made in build/image/:
#   bin/     pulumi and pulumi-resource-openstack, from tools/build.sh (built from Go modules)
#   wheels/  the dependencies pinned with hashes in image/requirements.txt, downloaded on this
#            machine (the build itself reaches no network: no registry, no index) and kept
#            until the pins change
#   app/     this tree's wheel (tracked and untracked files, not ignored ones)
#
# Usage:
#   image/build.sh           build; print the tags and the size, and where it goes
#   image/build.sh --help
#
# Environment:
#   CONTAINER   podman (default) or docker
#   BASE        the base image (default: `image/debian-base.sh --tag`, which that script
#               makes from Debian packages when it is missing; elsewhere e.g.
#               BASE=docker.io/library/python:3.11-slim)
#   IMAGE       the repository to tag (default localhost/lb-reconciler)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "image/build.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

container=${CONTAINER:-podman}
own_base=$(bash "$here/debian-base.sh" --tag)
base=${BASE:-$own_base}
image=${IMAGE:-localhost/lb-reconciler}
python=${PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=python3
log() { printf '[image] %s\n' "$*" >&2; }
die() { printf '[image] error: %s\n' "$*" >&2; exit 1; }
command -v "$container" >/dev/null ||
  die "$container is not installed (Debian: apt-get install podman runc; or CONTAINER=docker)"

flags=(--network host)
if [ "$container" = podman ]; then
  read -r -a more < <(bash "$here/podman-flags.sh")
  flags+=("${more[@]}")
fi

start=$SECONDS
if [ "$base" = "$own_base" ] && ! "$container" image exists "$base" 2>/dev/null; then
  CONTAINER=$container bash "$here/debian-base.sh"
fi

ctx=$root/build/image
rm -rf "$ctx/bin" "$ctx/app" "$ctx/src" "$ctx/image"
mkdir -p "$ctx/bin" "$ctx/wheels" "$ctx/app" "$ctx/src" "$ctx/image"
tools=$(bash "$root/tools/build.sh" --path)
cp -L "$tools/pulumi" "$tools/pulumi-resource-openstack" "$ctx/bin/"
cp "$here/requirements.txt" "$here/prune.sh" "$here/zip_package.py" "$here/bytecode.py" "$ctx/image/"
(cd "$root" && git ls-files -z -co --exclude-standard -- pyproject.toml README.md reconciler stacks emulator |
  tar --null -T - -c) | tar -C "$ctx/src" -x
pyver=$("$container" run --rm "${flags[@]}" --entrypoint python3 "$base" -c \
  'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")' 2>/dev/null) ||
  die "cannot run python3 in $base"
# the dependencies' wheels are kept between builds and downloaded again only when the pins or
# the base's Python change
wanted="$pyver $(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ "$(cat "$ctx/wheels.for" 2>/dev/null)" != "$wanted" ]; then
  log "wheels for Python $pyver (the base's) from image/requirements.txt"
  rm -rf "$ctx/wheels" "$ctx/wheels.for" && mkdir -p "$ctx/wheels"
  "$python" -m pip download -q --disable-pip-version-check --require-hashes --only-binary=:all: \
    --python-version "$pyver" --no-deps -d "$ctx/wheels" -r "$here/requirements.txt"
  echo "$wanted" > "$ctx/wheels.for"
fi
"$python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$ctx/app" "$ctx/src"
rm -rf "$ctx/src"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml")
revision=$(git -C "$root" describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
source_url=$(git -C "$root" remote get-url origin 2>/dev/null || true)
log "building $image:$version ($revision) on $base"
"$container" build "${flags[@]}" -f "$root/Containerfile" \
  --build-arg "BASE=$base" --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  --build-arg "CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)" --build-arg "SOURCE=$source_url" \
  -t "$image:$version" -t "$image:dev" "$ctx" >&2
log "built $image:$version and $image:dev in $((SECONDS - start))s"

# where the bytes go (deploy/README.md, "The image", has the figures and what was left out)
mb() { echo "$((($1 + 500000) / 1000000))"; }
size=$("$container" image inspect --format '{{.Size}}' "$image:$version")
base_size=$("$container" image inspect --format '{{.Size}}' "$base")
parts=$("$container" run --rm "${flags[@]}" --user 0 --entrypoint sh "$image:$version" -c '
  cd /opt/lb-reconciler
  bins=$(du -scb /usr/local/bin/pulumi /usr/local/bin/pulumi-resource-openstack | tail -1 | cut -f1)
  all=$(du -sb . | cut -f1) app=$(du -sb app | cut -f1)
  pyc=$(find . -name "*.pyc" -printf "%s\n" | awk "{n += \$1} END {print n + 0}")
  echo "$bins $((all - app)) $app $pyc"') || die "cannot look into $image:$version"
read -r bins venv app pyc <<< "$parts"
log "image $image:$version: $(mb "$size") MB: the base $(mb "$base_size") MB ($base)," \
  "pulumi and its plugin $(mb "$bins") MB, the virtualenv $(mb "$venv") MB, this package" \
  "$(mb "$app") MB; of the last two, bytecode $(mb "$pyc") MB"
