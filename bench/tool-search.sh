#!/usr/bin/env bash
# Issue 31's benchmark (see bench/tool_search.py and bench/README.md, "Deferred tools and
# tool search"): the gateway's CPU per request with 500 deferred tools and one hosted search,
# against the same request with nothing deferred.
#   bench/tool-search.sh [--no-build] [--bin-dir DIR] [--requests N] [SCENARIO ...]
# Builds the release binaries unless --no-build or --bin-dir is given.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD=1
ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) BUILD=0 ;;
        --bin-dir) ARGS+=(--bin-dir "$2"); BUILD=0; shift ;;
        *) ARGS+=("$1") ;;
    esac
    shift
done
if [ "$BUILD" = 1 ]; then
    (cd "$ROOT" && cargo build --release -p responses-gateway -p scripted-upstream)
fi
exec python3 "$ROOT/bench/tool_search.py" "${ARGS[@]}"
