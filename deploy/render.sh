#!/usr/bin/env bash
# Renders the raw manifests of deploy/ from the Helm chart (charts/lb-reconciler), the one source
# of both: `make manifests` after a change to the chart. tests/e2e/test_chart.py fails when
# these files differ from a fresh rendering. The example Secrets are written by hand.
#
# Applied with kubectl they are not Helm's: its two labels (managed-by, chart) are left out.
# The release is "lb-reconciler" in the namespace lb-reconciler, with clusterName=kubernetes
# (OCCM's default --cluster-name): set yours in deployment.yaml before applying (deploy/README.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
chart=$here/../charts/lb-reconciler
out=${OUT:-$here}  # the folder to write into (the tests render into another and compare)
helm=${HELM:-helm}
header="# Rendered from charts/lb-reconciler by \`make manifests\` (deploy/render.sh): edit the chart,
# not this file."

render() {  # render OUT VALUES... -- TEMPLATES...
  local out=$1; shift
  local values=() shows=()
  while [ "$1" != -- ]; do values+=(--set "$1"); shift; done; shift
  for t in "$@"; do shows+=(--show-only "templates/$t"); done
  { echo "$header"
    "$helm" template lb-reconciler "$chart" --namespace lb-reconciler \
      --set clusterName=kubernetes "${values[@]}" "${shows[@]}" |
      sed -e '/^# Source: /d' -e '/app.kubernetes.io\/managed-by: Helm$/d' -e '/helm.sh\/chart: /d'
  } > "$out.tmp"
  mv "$out.tmp" "$out"
}

mkdir -p "$out/file-backend"
render "$out/rbac.yaml" namespace.create=true -- namespace.yaml serviceaccount.yaml rbac.yaml
render "$out/deployment.yaml" -- deployment.yaml
render "$out/pdb.yaml" -- pdb.yaml
render "$out/file-backend/deployment.yaml" state.backend=file -- deployment.yaml
render "$out/file-backend/pvc.yaml" state.backend=file -- pvc.yaml
