#!/usr/bin/env bash
# deploy/kubernetes/load/run.sh [GENERATORS]: loads the mcpgw Service from GENERATORS pods at once (default 4)
# and merges their reports into one. Needs kubectl (its current context) and an mcpgw binary for the merge.
#
#   NAMESPACE      the namespace of the mcpgw Service (default mcpgw)
#   START_DELAY_S  seconds from now to the window's start, for the pods to be scheduled and set up (default 60)
#   OUT            where the reports go (default ./load-reports): gen-0.json … and merged.json
#   MCPGW          the mcpgw binary that merges (default mcpgw on the PATH)
#   IMAGE          the generators' image, your build of deploy/Dockerfile (default mcpgw:dev)
set -euo pipefail
generators="${1:-4}"
namespace="${NAMESPACE:-mcpgw}"
out="${OUT:-load-reports}"
mcpgw="${MCPGW:-mcpgw}"
image="${IMAGE:-mcpgw:dev}"
here="$(cd "$(dirname "$0")" && pwd)"
case "$generators" in
  '' | *[!0-9]* | 0) echo "run.sh: GENERATORS must be a positive number, not '$generators'" >&2; exit 2 ;;
esac

start_at=$((($(date +%s) + ${START_DELAY_S:-60}) * 1000))
mkdir -p "$out"
kubectl -n "$namespace" delete job mcpgw-load --ignore-not-found --wait=true
sed -e "s/@START_AT@/$start_at/" \
  -e "s|image: mcpgw:dev|image: $image|" \
  -e "s/^  completions: [0-9]*/  completions: $generators/" \
  -e "s/^  parallelism: [0-9]*/  parallelism: $generators/" \
  "$here/job.yaml" | kubectl -n "$namespace" apply -f -
echo "run.sh: $generators generators start their load at $start_at (Unix ms)" >&2
kubectl -n "$namespace" wait --for=condition=complete --timeout=900s job/mcpgw-load

reports=()
for i in $(seq 0 $((generators - 1))); do
  pod=$(kubectl -n "$namespace" get pods -l "job-name=mcpgw-load,batch.kubernetes.io/job-completion-index=$i" \
    -o jsonpath='{.items[0].metadata.name}')
  kubectl -n "$namespace" logs "$pod" >"$out/gen-$i.json"
  reports+=("$out/gen-$i.json")
done
"$mcpgw" load merge "${reports[@]}" --json "$out/merged.json"
