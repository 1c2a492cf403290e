#!/usr/bin/env bash
# Python end-to-end suite: the official openai SDK against the gateway.
#
#   tests/python/run.sh [pytest args...]
#
# Environment:
#   GATEWAY_BIN, UPSTREAM_BIN  binaries to test; when either is unset, runs
#                              `cargo build -p responses-gateway -p scripted-upstream`
#                              and uses target/debug/{responses-gateway,scripted-upstream}.
#   PY_REQUIREMENTS            requirements file (default tests/python/requirements.txt);
#                              requirements-<name>.txt gets its own venv target/py-venv-<name>,
#                              so the suite can run under another pinned SDK version.
#   PY_ALSO_REQUIREMENTS       when PY_REQUIREMENTS is unset: after the main run, run
#                              $PY_ALSO_TESTS again (same pytest args, same binaries) under each
#                              of these space-separated requirements files. Default
#                              tests/python/requirements-sdk28.txt (openai 2.8.0), but only when
#                              run.sh gets no pytest args (a targeted run such as `-k x` does not
#                              repeat) unless PY_ALSO_REQUIREMENTS is set; set it empty to skip.
#                              scripts/test.sh (and so CI) runs run.sh without args: both runs.
#   PY_ALSO_TESTS              what those extra runs test (default
#                              tests/python/test_sdk28_replay.py: how an older SDK replays
#                              server-tool output; tests/python for the whole suite).
#   PY_TESTS                   what pytest runs (default tests/python); extra args still apply.
#   PY_VENV                    venv directory (overrides the default above).
#   PYTHON                     interpreter that creates the venv (default python3).
# Exit code: pytest's (with the extra runs: the first non-zero one; an extra run whose
# pytest args select no test, exit 5, counts as passed).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac

CALLER_PWD="$PWD"
main_run=0
[ -z "${PY_REQUIREMENTS:-}" ] && main_run=1
REQ="${PY_REQUIREMENTS:-$HERE/requirements.txt}"
case "$REQ" in /*) ;; *) REQ="$PWD/$REQ" ;; esac
[ -f "$REQ" ] || { echo "run.sh: no requirements file $REQ" >&2; exit 2; }
req_name="$(basename "$REQ" .txt)"
if [ "$req_name" = "requirements" ]; then
  default_venv="$TARGET_DIR/py-venv"
else
  default_venv="$TARGET_DIR/py-venv-${req_name#requirements-}"
fi
VENV="${PY_VENV:-$default_venv}"
PYTHON="${PYTHON:-python3}"

# shellcheck source=venv.sh
. "$HERE/venv.sh"

if [ -z "${GATEWAY_BIN:-}" ] || [ -z "${UPSTREAM_BIN:-}" ]; then
  echo "run.sh: cargo build -p responses-gateway -p scripted-upstream" >&2
  (cd "$ROOT" && cargo build -p responses-gateway -p scripted-upstream)
  export GATEWAY_BIN="${GATEWAY_BIN:-$TARGET_DIR/debug/responses-gateway}"
  export UPSTREAM_BIN="${UPSTREAM_BIN:-$TARGET_DIR/debug/scripted-upstream}"
fi
# Absolute paths: the tests run from the repository root and start the gateway elsewhere.
case "$GATEWAY_BIN" in /*) ;; *) GATEWAY_BIN="$PWD/$GATEWAY_BIN" ;; esac
case "$UPSTREAM_BIN" in /*) ;; *) UPSTREAM_BIN="$PWD/$UPSTREAM_BIN" ;; esac
export GATEWAY_BIN UPSTREAM_BIN

# Keep the source tree clean (no __pycache__ next to the tests).
export PYTHONDONTWRITEBYTECODE=1
cd "$ROOT"
set +e
# shellcheck disable=SC2086  # PY_TESTS is a list of paths
"$VENV/bin/python" -m pytest ${PY_TESTS:-$HERE} "$@"
rc=$?
set -e

if [ "$main_run" = 1 ] && { [ $# -eq 0 ] || [ -n "${PY_ALSO_REQUIREMENTS+set}" ]; }; then
  also_tests=""
  for t in ${PY_ALSO_TESTS:-$HERE/test_sdk28_replay.py}; do
    case "$t" in /*) ;; *) t="$CALLER_PWD/$t" ;; esac
    also_tests="$also_tests $t"
  done
  for extra in ${PY_ALSO_REQUIREMENTS-$HERE/requirements-sdk28.txt}; do
    case "$extra" in /*) ;; *) extra="$CALLER_PWD/$extra" ;; esac
    echo "run.sh: again under $(basename "$extra"):$also_tests" >&2
    set +e
    PY_REQUIREMENTS="$extra" PY_ALSO_REQUIREMENTS="" PY_VENV="" PY_TESTS="$also_tests" bash "$HERE/run.sh" "$@"
    extra_rc=$?
    set -e
    [ "$extra_rc" = 5 ] && extra_rc=0
    [ "$rc" = 0 ] && rc=$extra_rc
  done
fi
exit $rc
