# tests/lib/pgpipe.sh - sourced by tests/api/run, tests/fleet/run and tests/ui/run
# (from the repository root).
# shellcheck shell=bash

# Builds the harness's psql, build/pgpipe (tests/lib/pgpipe.c; scripts/test builds it
# before the suites), or exits with a message naming the runner ($1, e.g. tests/api/run).
build_pgpipe() {
    if ! make -s build/pgpipe >&2; then
        echo "$1: cannot build build/pgpipe (needs cc and libpq-dev)" >&2
        exit 1
    fi
}
