#!/usr/bin/env bash
# Builds the real toolchain this project runs on, from Go modules, into a cache outside the repo:
#
#   pulumi                     the Pulumi CLI             (tools/pulumi)
#   pulumi-resource-openstack  the OpenStack plugin       (tools/openstack)
#   etcd                       for the local control plane (tools/etcd)
#   kube-apiserver, kubectl    for the local control plane (tools/kube)
#   minio                      an S3-compatible server for the s3:// state backend's tests
#                              (tools/minio; only with --with-minio)
#   helm                       the chart's tests: lint, template, install, upgrade, uninstall
#                              (tools/helm; only with --with-helm)
#   promtool                   the chart's alert rules' tests: check rules, test rules
#                              (tools/promtool; only with --with-promtool)
#
# Each tool is cached under $LBR_TOOLS_CACHE/<tool>-<version>-<hash of its Go module>/ so a change
# to one tool rebuilds only that tool, and a warm run costs seconds. A matching binary already on
# PATH (a user's laptop, a container image) is used instead of building.
#
# Usage:
#   tools/build.sh            build what is missing, install the plugin, print nothing but progress
#   tools/build.sh --path     the same, then print the folder holding the binaries (stdout only)
#   tools/build.sh --with-minio [--with-helm] [--with-promtool] [--path]
#                             MinIO too (the tests' s3:// backend; ten minutes more when cold);
#                             helm too (the chart's tests; two minutes more when cold);
#                             promtool too (the alert rules' tests; ten CPU minutes when cold);
#                             the folder printed then holds every tool asked for
#   tools/build.sh --help
#
# Environment:
#   LBR_TOOLS_CACHE  cache root (default: ${XDG_CACHE_HOME:-~/.cache}/lb-reconciler/tools)
#   PULUMI_HOME      where the plugin is installed (default: Pulumi's own, ~/.pulumi)
#   LBR_NO_AMBIENT=1 never use binaries found on PATH; always build
#   LBR_TOOLS_VERBOSE=1  show every module the go command downloads (hidden by default)
set -euo pipefail

PULUMI_VERSION=3.259.0          # = the `pulumi` pin in pyproject.toml
OPENSTACK_PLUGIN_VERSION=5.5.1  # = the `pulumi-openstack` pin in pyproject.toml
ETCD_VERSION=3.6.16
KUBE_VERSION=1.36.3
# (pins above are part of every tool's cache key; pins below only of their own tool's)
MINIO_COMMIT=7aac2a2c5b7c       # = the pseudo-version in tools/minio/go.mod (no semver tags exist)
MINIO_DATE=2026-02-12T20:18:48Z # its commit time, which MinIO reports as its version
HELM_VERSION=3.22.0             # = the helm.sh/helm/v3 version in tools/helm/go.mod
PROMTOOL_VERSION=0.316.0        # = the github.com/prometheus/prometheus version in tools/promtool/go.mod

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${LBR_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lb-reconciler/tools}
print_path=0
with_minio=0
with_helm=0
with_promtool=0

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
for arg in "$@"; do
  case "$arg" in
    --path) print_path=1 ;;
    --with-minio) with_minio=1 ;;
    --with-helm) with_helm=1 ;;
    --with-promtool) with_promtool=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[tools] %s\n' "$*" >&2; }
die() { printf '[tools] error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || die "Go is not installed; install Go >= 1.26 (Debian: golang-go from backports, or your distribution's package) and run again"
command -v sha256sum >/dev/null || die "sha256sum is missing (coreutils)"

# Never reach for another Go toolchain or a VCS host: everything comes from the module proxy.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
# The compiler and linker collect garbage less often: a cold build of etcd took 154 CPU s
# instead of 175 (peak RSS 456 MB instead of 413), the same binary. The user's setting wins.
export GOGC=${GOGC:-400}
# The checksum database does not answer for these modules here; their hashes are pinned in the
# committed go.sum files, which the go command still verifies on every download.
export GONOSUMDB=github.com/terraform-provider-openstack,github.com/pulumi/pulumi-dotnet,github.com/pulumi/pulumi-yaml

# key DIR: a short hash of everything in DIR that decides the build.
key() {
  (cd "$1" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 | sort -z |
    xargs -0 sha256sum; go env GOVERSION; sed -n '/^PULUMI_VERSION/,/^KUBE_VERSION/p' "$here/build.sh") |
    sha256sum | cut -c1-12
}

# ambient NAME WANT CMD...: echo the path of NAME on PATH if `CMD` prints WANT.
ambient() {
  local name=$1 want=$2; shift 2
  [ "${LBR_NO_AMBIENT:-}" = 1 ] && return 1
  local p; p=$(command -v "$name" 2>/dev/null) || return 1
  case "$p" in "$cache"/*) return 1 ;; esac
  "$@" 2>/dev/null | grep -qF -- "$want" || return 1
  echo "$p"
}

# quiet CMD...: run CMD with the go command's "go: downloading ..." lines dropped from its stderr
# (hundreds on a cold build), unless LBR_TOOLS_VERBOSE=1; everything else, errors included, shows.
quiet() {
  if [ "${LBR_TOOLS_VERBOSE:-}" = 1 ]; then "$@"; return; fi
  { "$@" 2>&1 1>&3 | { grep -v '^go: downloading ' || true; } >&2; } 3>&1
}

# timed LABEL CMD...: run CMD, log wall time and peak memory (where /usr/bin/time exists).
timed() {
  local label=$1; shift
  local start=$SECONDS
  if [ -x /usr/bin/time ]; then
    quiet /usr/bin/time -f "[tools] $label: %es wall, %MKB peak RSS" "$@"
  else
    quiet "$@"; log "$label: $((SECONDS - start))s wall"
  fi
}

# ready DIR: before a cold build in DIR, download its modules, then wait for the standard library.
# Side by side, each build would compile the standard library for itself, all at the same time
# (the go command's cache serves only what is finished): the first builder here compiles it once
# while the others still download, and they all find it in the cache. `go mod download` fetches a
# few modules the build does not need (225 for the plugin's 218, 258 for MinIO's 242).
ready() {
  (cd "$1" && quiet go mod download)
  command -v flock >/dev/null || return 0
  (
    flock 9
    [ -e "$work/std" ] || { (cd "$1" && quiet go build -trimpath std) || true; touch "$work/std"; }
  ) 9>"$work/std.lock"
}

# build_into DEST DIR: build into DEST (an atomic rename, so an interrupted build leaves no half dir).
begin() { rm -rf "$1.tmp"; mkdir -p "$1.tmp/bin"; }
commit() { rm -rf "$1"; mv "$1.tmp" "$1"; }

build_pulumi() {
  local p
  if p=$(ambient pulumi "v$PULUMI_VERSION" pulumi version); then echo "$p"; return; fi
  local d="$cache/pulumi-$PULUMI_VERSION-$(key "$here/pulumi")"
  if [ ! -x "$d/bin/pulumi" ]; then
    log "building pulumi v$PULUMI_VERSION (cold: several minutes)"
    begin "$d"
    ready "$here/pulumi"
    (cd "$here/pulumi" && timed "pulumi" go build -trimpath \
      -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
      -o "$d.tmp/bin/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
    commit "$d"
  fi
  echo "$d/bin/pulumi"
}

build_openstack() {
  local d="$cache/openstack-$OPENSTACK_PLUGIN_VERSION-$(key "$here/openstack")"
  if [ ! -x "$d/bin/pulumi-resource-openstack" ]; then
    log "building pulumi-resource-openstack $OPENSTACK_PLUGIN_VERSION (cold: ten minutes or more)"
    begin "$d"
    # The plugin embeds its schema, generated by tfgen. Build in a writable copy so the checkout
    # stays clean and read-only checkouts work.
    local src="$d.tmp/src"
    cp -r "$here/openstack" "$src"
    ready "$src"
    local ver="-X lbreconciler.local/tools/openstack/provider.Version=$OPENSTACK_PLUGIN_VERSION"
    (cd "$src" && timed "pulumi-tfgen-openstack" go build -trimpath -ldflags "-s -w $ver" \
      -o "$d.tmp/tfgen" ./cmd/pulumi-tfgen-openstack)
    # tfgen reads the Terraform provider's docs from the module cache for descriptions; examples
    # are skipped (converting them needs `pulumi convert` and a Terraform converter plugin).
    (cd "$src" && timed "schema" "$d.tmp/tfgen" schema --skip-examples \
      --out "$src/cmd/pulumi-resource-openstack" >"$d.tmp/tfgen.log" 2>&1) ||
      { cat "$d.tmp/tfgen.log" >&2; die "generating the plugin schema failed"; }
    [ -s "$src/cmd/pulumi-resource-openstack/schema.json" ] || die "tfgen wrote no schema.json"
    (cd "$src" && timed "pulumi-resource-openstack" go build -trimpath -ldflags "-s -w $ver" \
      -o "$d.tmp/bin/pulumi-resource-openstack" ./cmd/pulumi-resource-openstack)
    cp "$src/cmd/pulumi-resource-openstack/schema.json" "$d.tmp/schema.json"
    rm -rf "$src" "$d.tmp/tfgen" "$d.tmp/tfgen.log"
    commit "$d"
  fi
  echo "$d/bin/pulumi-resource-openstack"
}

build_etcd() {
  local p
  if p=$(ambient etcd "etcd Version: $ETCD_VERSION" etcd --version); then echo "$p"; return; fi
  local d="$cache/etcd-$ETCD_VERSION-$(key "$here/etcd")"
  if [ ! -x "$d/bin/etcd" ]; then
    log "building etcd v$ETCD_VERSION"
    begin "$d"
    ready "$here/etcd"
    (cd "$here/etcd" && timed "etcd" go build -trimpath -ldflags "-s -w" -o "$d.tmp/bin/etcd" go.etcd.io/etcd/server/v3)
    commit "$d"
  fi
  echo "$d/bin/etcd"
}

build_kube() {
  local p q
  if p=$(ambient kube-apiserver "Kubernetes v$KUBE_VERSION" kube-apiserver --version) &&
     q=$(ambient kubectl "v$KUBE_VERSION" kubectl version --client); then
    echo "$p"; echo "$q"; return
  fi
  local d="$cache/kube-$KUBE_VERSION-$(key "$here/kube")"
  if [ ! -x "$d/bin/kube-apiserver" ] || [ ! -x "$d/bin/kubectl" ]; then
    log "building kube-apiserver and kubectl v$KUBE_VERSION (cold: ten minutes or more)"
    begin "$d"
    ready "$here/kube"
    local minor=${KUBE_VERSION#*.}; minor=${minor%%.*}
    local ld="-s -w"
    for pkgpath in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $pkgpath.gitVersion=v$KUBE_VERSION -X $pkgpath.gitMajor=1 -X $pkgpath.gitMinor=$minor"
      ld="$ld -X $pkgpath.gitTreeState=clean -X $pkgpath.buildDate=1970-01-01T00:00:00Z"
    done
    (cd "$here/kube" && timed "kube-apiserver" go build -trimpath -ldflags "$ld" \
      -o "$d.tmp/bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
    (cd "$here/kube" && timed "kubectl" go build -trimpath -ldflags "$ld" \
      -o "$d.tmp/bin/kubectl" k8s.io/kubernetes/cmd/kubectl)
    commit "$d"
  fi
  echo "$d/bin/kube-apiserver"; echo "$d/bin/kubectl"
}

build_minio() {
  local p
  if p=$(ambient minio "$MINIO_COMMIT" minio --version); then echo "$p"; return; fi
  local d="$cache/minio-$MINIO_COMMIT-$(key "$here/minio")"
  if [ ! -x "$d/bin/minio" ]; then
    log "building minio ($MINIO_COMMIT; cold: ten minutes or more)"
    begin "$d"
    ready "$here/minio"
    local tag="DEVELOPMENT.${MINIO_DATE//:/-}" ld="-s -w"
    ld="$ld -X github.com/minio/minio/cmd.Version=$MINIO_DATE -X github.com/minio/minio/cmd.ReleaseTag=$tag"
    ld="$ld -X github.com/minio/minio/cmd.CommitID=$MINIO_COMMIT -X github.com/minio/minio/cmd.ShortCommitID=$MINIO_COMMIT"
    ld="$ld -X github.com/minio/minio/cmd.CopyrightYear=${MINIO_DATE%%-*}"
    (cd "$here/minio" && timed "minio" go build -trimpath -ldflags "$ld" -o "$d.tmp/bin/minio" github.com/minio/minio)
    commit "$d"
  fi
  echo "$d/bin/minio"
}

build_helm() {
  local p
  if p=$(ambient helm "v$HELM_VERSION" helm version --short); then echo "$p"; return; fi
  local d="$cache/helm-$HELM_VERSION-$(key "$here/helm")"
  if [ ! -x "$d/bin/helm" ]; then
    log "building helm v$HELM_VERSION (cold: two minutes or more)"
    begin "$d"
    ready "$here/helm"
    (cd "$here/helm" && timed "helm" go build -trimpath \
      -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION" \
      -o "$d.tmp/bin/helm" helm.sh/helm/v3/cmd/helm)
    commit "$d"
  fi
  echo "$d/bin/helm"
}

build_promtool() {
  local d="$cache/promtool-$PROMTOOL_VERSION-$(key "$here/promtool")"
  if [ ! -x "$d/bin/promtool" ]; then
    log "building promtool v$PROMTOOL_VERSION (cold: ten CPU minutes or more)"
    begin "$d"
    ready "$here/promtool"
    # remove_all_sd: without Prometheus's service discoveries (AWS, Azure, GCE and 20 more), which
    # only `promtool check config` uses; a fifth fewer packages to compile.
    (cd "$here/promtool" && timed "promtool" go build -trimpath -tags remove_all_sd \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=$PROMTOOL_VERSION" \
      -o "$d.tmp/bin/promtool" github.com/prometheus/prometheus/cmd/promtool)
    commit "$d"
  fi
  echo "$d/bin/promtool"
}

mkdir -p "$cache"
# One build at a time per cache: two at once (a `make demo` beside a `make test`) would build the
# same tool into the same DIR.tmp, and the second's `begin` removes the first's half-made tree
# under it ("mv: cannot stat ...kube-1.36.3-....tmp"). The second waits, then finds the tools made.
if command -v flock >/dev/null; then
  exec 8>"$cache/.build.lock"
  flock -n 8 || { log "another build is using $cache; waiting for it"; flock 8; }
fi
start=$SECONDS
# Every tool builds at once: the downloads of one overlap the others' compiles and links (cold on
# 2 cores the builds are CPU-bound: 2,681 CPU s in 23 min 52 s, tools/README.md). The go command
# locks its module and build caches for concurrent use; the standard library is compiled once
# (ready).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
names=() pids=()
spawn() { local name=$1; shift; "$@" >"$work/$name" & names+=("$name"); pids+=($!); }
spawn pulumi build_pulumi
spawn openstack build_openstack
spawn etcd build_etcd
spawn kube build_kube
if [ "$with_minio" = 1 ]; then spawn minio build_minio; fi
if [ "$with_helm" = 1 ]; then spawn helm build_helm; fi
if [ "$with_promtool" = 1 ]; then spawn promtool build_promtool; fi
failed=()
for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("${names[$i]}"); done
[ ${#failed[@]} -eq 0 ] || die "building ${failed[*]} failed (its errors are above)"
bins=()
for n in "${names[@]}"; do while read -r b; do bins+=("$b"); done <"$work/$n"; done

# One folder to put on PATH: links to each tool, keyed by what they are.
binkey=$(printf '%s\n' "${bins[@]}" | sha256sum | cut -c1-12)
bindir="$cache/bin-$binkey"
if [ ! -d "$bindir" ]; then
  mkdir -p "$bindir.tmp"
  for b in "${bins[@]}"; do ln -sf "$b" "$bindir.tmp/$(basename "$b")"; done
  commit "$bindir"
fi

# Install the plugin where the Pulumi CLI and the Automation API look for it, unless the same
# binary is already installed there.
plugin="$bindir/pulumi-resource-openstack"
home=${PULUMI_HOME:-$HOME/.pulumi}
installed="$home/plugins/resource-openstack-v$OPENSTACK_PLUGIN_VERSION/pulumi-resource-openstack"
if ! cmp -s "$plugin" "$installed" 2>/dev/null; then
  log "installing resource plugin openstack v$OPENSTACK_PLUGIN_VERSION into $home"
  PULUMI_SKIP_UPDATE_CHECK=true "$bindir/pulumi" plugin install resource openstack "$OPENSTACK_PLUGIN_VERSION" \
    --file "$(readlink -f "$plugin")" --reinstall >&2
fi

log "toolchain ready in $bindir ($((SECONDS - start))s)"
if [ "$print_path" = 1 ]; then echo "$bindir"; fi
