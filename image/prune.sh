#!/bin/sh
# Removes from the image's virtualenv (its folder: $1) what pip installs and the image never
# loads, and zips what it loads little of. Run by the Containerfile's venv stage, with
# zip_package.py beside it; the bytecode stage then imports every module of this package in what
# is left (image/bytecode.py), so a cut too many fails the build. deploy/README.md ("The image")
# has the sizes.
set -eu
venv=$1
here=$(dirname "$0")
site=$(echo "$venv"/lib/python3*/site-packages)
[ -d "$site" ] || { echo "prune.sh: no site-packages in $venv" >&2; exit 1; }

# pip, and setuptools (`python3 -m venv` of Python 3.11 installs both): nothing is installed in
# the image, and pbr needs setuptools only to build (image/excludes.txt)
"$venv/bin/python3" -m pip uninstall -y -q pip setuptools

# kubernetes' asyncio client (kubernetes.aio: 40 MB of sources), a copy of the synchronous one
# that the controller uses; it needs aiohttp, which the image leaves out (image/excludes.txt)
rm -rf "$site/kubernetes/aio"

# the packages' own tests
find "$site" -type d -name tests -prune -exec rm -rf {} +
find "$site/kubernetes" -name '*_test.py' -delete

# botocore's API models: those of the services that the s3:// backend's client and botocore's
# credential providers create clients of (S3; STS for assumed roles and web identity; SSO and
# SSO-OIDC for SSO profiles; Sign-In for `aws login`), not the 440 others (27 MB); the files at
# the top (endpoints, partitions, retry and default settings) stay
for service in "$site"/botocore/data/*/; do
  case $(basename "$service") in
    s3 | sts | sso | sso-oidc | signin) ;;
    *) rm -rf "$service" ;;
  esac
done

# kubernetes in a zip (image/zip_package.py): 33 MB of sources in 4 MB
PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python3" "$here/zip_package.py" "$site" kubernetes
