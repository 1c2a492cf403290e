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
#   PY_VENV                    venv directory (overrides the default above).
#   PYTHON                     interpreter that creates the venv (default python3).
# Exit code: pytest's.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac

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

if [ ! -x "$VENV/bin/python" ]; then
  echo "run.sh: creating venv $VENV" >&2
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV"
fi

# Install only when the requirements (or the interpreter) changed since the last install.
stamp="$VENV/.requirements.stamp"
want="$( { cat "$REQ"; "$VENV/bin/python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "run.sh: installing $REQ into $VENV" >&2
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQ"
  echo "$want" >"$stamp"
fi

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
"$VENV/bin/python" -m pytest "$HERE" "$@"
rc=$?
set -e
exit $rc
