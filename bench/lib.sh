# bench/lib.sh — what every bench/<name> script shares, sourced after it sets REPO and
# GPUFLEET_VAR_DIR: its messages, PostgreSQL's tools, and the cluster it measures.
#
#   log MSG...         "bench/<name>: MSG" on stderr (a bench may define its own log first)
#   die MSG...         log "error: MSG" and exit 1
#   bench_pg_up [--shared-buffers]
#                      sets PG_URL: BENCH_PG_URL's cluster when the caller gives one
#                      (tests/bench-smoke/run's, never stopped by the bench), else
#                      scripts/local-pg's under GPUFLEET_VAR_DIR, started if it is not up.
#                      With --shared-buffers, a running local cluster whose shared_buffers is
#                      not GPUFLEET_PG_SHARED_BUFFERS is restarted first. Sets PG_WAS_UP=1
#                      when the cluster was up before (the caller's, or already running).
#   db_url NAME        the URL of database NAME in that cluster
#   psql_admin ARGS... psql on database postgres, quiet, stopping at the first error
#   bench_pg_pid       sets PG_DATA (the cluster's data directory) and PG_PM (its
#                      postmaster's pid, empty when unreadable), for CPU accounting
# shellcheck shell=bash
# shellcheck disable=SC2034 # PG_WAS_UP, PG_DATA and PG_PM are for the sourcing bench

PGBIN=/usr/lib/postgresql/15/bin

declare -F log >/dev/null || log() { printf 'bench/%s: %s\n' "$(basename "$0")" "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

# shellcheck disable=SC2120 # the option is optional
bench_pg_up() {
    PG_WAS_UP=0
    if [[ -n "${BENCH_PG_URL:-}" ]]; then
        PG_WAS_UP=1
        PG_URL=$BENCH_PG_URL
        [[ "$PG_URL" == postgresql://gpufleet@/*\?* ]] || die "unexpected BENCH_PG_URL: $PG_URL"
        return 0
    fi
    if scripts/local-pg status >/dev/null 2>&1; then
        PG_WAS_UP=1
        if [[ "${1:-}" == --shared-buffers ]] &&
            [[ "$("$PGBIN/psql" -X -At -d "$(scripts/local-pg url 2>/dev/null || true)" \
                -c 'SHOW shared_buffers' 2>/dev/null)" != "$GPUFLEET_PG_SHARED_BUFFERS" ]]; then
            scripts/local-pg stop >&2 || true
            PG_WAS_UP=0
        fi
    fi
    PG_URL=$(scripts/local-pg start | tail -n 1)
    [[ "$PG_URL" == postgresql://gpufleet@/gpufleet\?* ]] || die "unexpected URL from scripts/local-pg: $PG_URL"
}

db_url() { printf 'postgresql://gpufleet@/%s?%s\n' "$1" "${PG_URL#*\?}"; }

psql_admin() {
    PGOPTIONS='-c client_min_messages=warning' "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -tA \
        "$(db_url postgres)" "$@"
}

bench_pg_pid() {
    if [[ -n "${BENCH_PG_URL:-}" ]]; then
        PG_DATA=$(psql_admin -c 'SHOW data_directory')
    else
        PG_DATA=$(readlink -f "$GPUFLEET_VAR_DIR/pg")/data
    fi
    PG_PM=
    [[ -r "$PG_DATA/postmaster.pid" ]] && PG_PM=$(head -n 1 "$PG_DATA/postmaster.pid")
    return 0
}
