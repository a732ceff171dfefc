#!/usr/bin/env bash
# Prints the podman flags this machine needs to build and run containers (the tests use them too):
# crun cannot run under a hybrid cgroup hierarchy, runc can; a sandbox without CAP_SYS_RESOURCE
# cannot raise resource limits, and podman's defaults (nproc above the sandbox's hard limit) fail
# with "setrlimit ... operation not permitted", so pass limits it may set. Prints nothing that
# changes a normal machine's behaviour beyond those limits.
set -euo pipefail
flags=()
if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] && command -v runc >/dev/null; then
  flags+=(--runtime runc)
fi
flags+=(--ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
echo "${flags[*]}"
