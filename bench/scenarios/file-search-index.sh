#!/usr/bin/env bash
# shellcheck shell=bash
# Embedded vector-store benchmark (issue 5), run on its own, not by bench/run.sh:
#
#   bench/scenarios/file-search-index.sh [DOCS] [QUERIES]     # default 1000 documents, 1000 queries
#
# Ingests DOCS small documents (~500 bytes each, ~500 KB in all) into a fresh embedded index
# (crates/gateway/examples/file_search_index.rs, in-process, no HTTP) and prints ingestion
# MB/s (upload to `completed`), keyword (BM25) search p50/p99 ms and the index size on disk;
# hybrid search p50/p99 too when an embedder is configured:
#   BENCH_EMBEDDINGS_URL=http://127.0.0.1:8000/v1 BENCH_EMBEDDINGS_MODEL=all-MiniLM-L6-v2
#   (optional BENCH_EMBEDDINGS_KEY_ENV=NAME_OF_KEY_VARIABLE), or BENCH_MINILM_DIR=/path/to/model
#   with BENCH_FEATURES=minilm.
# BENCH_PROFILE (default release) picks the cargo profile; `dev` skips the release build.
#
# bench/run.sh sources every bench/scenarios/*.sh: sourced, this file defines nothing and
# adds no scenario.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    features=()
    [ -n "${BENCH_FEATURES:-}" ] && features=(--features "$BENCH_FEATURES")
    cd "$ROOT"
    exec cargo run -q --profile "${BENCH_PROFILE:-release}" -p responses-gateway "${features[@]}" \
        --example file_search_index -- "$@"
fi
