#!/usr/bin/env bash
# idle-shutdown.sh — stop the hosts gpufleet recommends stopping (idle past their pool's
# idle_stop_after_seconds, with usage data and no running job).
#
#   GPUFLEET_URL=http://127.0.0.1:8080 GPUFLEET_TOKEN=<operator JWT> \
#       examples/idle-shutdown.sh [--dry-run]
#
# Lists GET /v1/recommendations?action=stop, prints each, and applies it with
# POST /v1/hosts/{id}/stop {reason: <the recommendation's reason>}. With --dry-run the
# stop is called with dry_run: true and the command that would run is printed; nothing
# is stopped. Hosts without usage data are never recommended, so never stopped.
# Needs curl and jq. Exits 1 on any API error (after trying every recommendation), 2 on
# bad usage.
set -euo pipefail

dry_run=false
for arg in "$@"; do
    case "$arg" in
    --dry-run) dry_run=true ;;
    -h | --help)
        sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: $0 [--dry-run]" >&2
        exit 2
        ;;
    esac
done
: "${GPUFLEET_URL:?set GPUFLEET_URL (e.g. http://127.0.0.1:8080)}"
: "${GPUFLEET_TOKEN:?set GPUFLEET_TOKEN (an operator token)}"
url="${GPUFLEET_URL%/}"

tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT

# api METHOD PATH [BODY]: prints the response body; returns 1 unless the status is 2xx.
api() {
    local code args=(-sS -o "$tmp" -w '%{http_code}' -X "$1" "$url$2"
        -H "Authorization: Bearer $GPUFLEET_TOKEN" -H 'Accept: application/json')
    if [[ $# -ge 3 ]]; then
        args+=(-H 'Content-Type: application/json' --data-binary "$3")
    fi
    code="$(curl "${args[@]}")" || {
        echo "idle-shutdown: $1 $2: cannot reach $url" >&2
        return 1
    }
    cat "$tmp"
    if [[ "$code" != 2?? ]]; then
        echo "idle-shutdown: $1 $2: HTTP $code: $(jq -r '.detail // .title // empty' "$tmp" 2>/dev/null)" >&2
        return 1
    fi
}

recs="$(api GET '/v1/recommendations?action=stop')" || exit 1
n="$(jq '.items | length' <<<"$recs")"
echo "$n stop recommendation(s) at $(jq -r .at <<<"$recs")"
jq -r '.no_usage_data[] | "skip \(.host_id): \(.reason // "no_usage_data" | gsub("_"; " "))"' <<<"$recs"

rc=0
while IFS=$'\t' read -r host reason; do
    [[ -n "$host" ]] || continue
    echo "stop $host: $reason"
    body="$(jq -cn --arg r "$reason" --argjson d "$dry_run" \
        'if $d then {reason: $r, dry_run: true} else {reason: $r} end')"
    if ! out="$(api POST "/v1/hosts/$host/stop" "$body")"; then
        rc=1
        continue
    fi
    if $dry_run; then
        jq -r '"  would run on \(.host.user)@\(.host.address):\(.host.port) (\(.host.name)): \(.command)"' <<<"$out"
    else
        jq -r '"  queued job \(.id) (\(.state))"' <<<"$out"
    fi
done < <(jq -r '.items[] | [.target.host_ids[0], .reason] | @tsv' <<<"$recs")
exit "$rc"
