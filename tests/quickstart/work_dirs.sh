#!/usr/bin/env bash
# Checks of scripts/quickstart.sh that need no build, model or network: a bad --port is
# refused up front; a run never touches the work directory of a quickstart that is running
# (refused, naming it); a run on another port works in a directory of its own. Runs in a
# temporary QUICKSTART_DIR with a stand-in python (it finds "a free port" and fails to make
# the venv, so a run that gets past its checks ends there; GATEWAY_BIN=/bin/false ends it
# where a venv is ready).
# Usage: bash tests/quickstart/work_dirs.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

tmp="$(mktemp -d)"
holder=""
trap '[[ -z "$holder" ]] || kill "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
fake_py="$tmp/python"
cat > "$fake_py" <<'PY'
#!/bin/sh
[ "$1" = "-c" ] && { echo 18123; exit 0; }
echo "stand-in python: no venv here" >&2
exit 3
PY
chmod +x "$fake_py"
export QUICKSTART_DIR="$tmp/work" PYTHON="$fake_py" GATEWAY_BIN=/bin/false

run() {  # run ARGS...: the quickstart's exit code; its stderr in $tmp/err
  set +e
  timeout 60 bash scripts/quickstart.sh "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  set -e
  return "$rc"
}

# A bad --port: refused before anything is made.
for bad in abc 70000 -1 8o80; do
  run --port "$bad" --check && fail "--port $bad accepted"
  grep -q -- "--port must be a port number" "$tmp/err" || fail "--port $bad: $(cat "$tmp/err")"
  [[ ! -e "$QUICKSTART_DIR" ]] || fail "--port $bad made $QUICKSTART_DIR"
done

# A quickstart runs on 8080 (its pid file, a log, its data): a second run on the same work
# directory is refused, naming it, and touches nothing.
sleep 300 & holder=$!
mkdir -p "$QUICKSTART_DIR/gateway-data"
echo "$holder 8080" > "$QUICKSTART_DIR/quickstart.pid"
echo "running gateway's log" > "$QUICKSTART_DIR/gateway.log"
echo "running llama's log" > "$QUICKSTART_DIR/llama.log"
echo data > "$QUICKSTART_DIR/gateway-data/store"
run --upstream-url http://127.0.0.1:9/v1 --check && fail "a second run on 8080 went on"
grep -q "another quickstart (pid $holder, port 8080)" "$tmp/err" || fail "not named: $(cat "$tmp/err")"
# Another port: a work directory of its own (the port found for --port 0), left at its end.
# (It then fails: no venv from the stand-in python, or, with a venv ready, no gateway.)
run --upstream-url http://127.0.0.1:9/v1 --port 0 --check && fail "a run with GATEWAY_BIN=/bin/false passed"
! grep -q "another quickstart" "$tmp/err" || fail "the run on port 0 was refused: $(cat "$tmp/err")"
[[ -d "$QUICKSTART_DIR/port-18123" ]] || fail "no work directory of its own: $(ls "$QUICKSTART_DIR")"
[[ ! -e "$QUICKSTART_DIR/port-18123/quickstart.pid" ]] || fail "its pid file was left behind"
# The running one's files are as they were.
[[ "$(cat "$QUICKSTART_DIR/gateway.log")" == "running gateway's log" ]] || fail "gateway.log touched"
[[ "$(cat "$QUICKSTART_DIR/llama.log")" == "running llama's log" ]] || fail "llama.log touched"
[[ "$(cat "$QUICKSTART_DIR/gateway-data/store")" == data ]] || fail "gateway-data touched"
[[ "$(cat "$QUICKSTART_DIR/quickstart.pid")" == "$holder 8080" ]] || fail "pid file touched"
# Once it has ended, its pid file is stale: the next run takes the directory.
kill "$holder"; wait "$holder" 2>/dev/null || true; holder=""
run --upstream-url http://127.0.0.1:9/v1 --check && fail "a run with GATEWAY_BIN=/bin/false passed"
! grep -q "another quickstart" "$tmp/err" || fail "a stale pid file refused the run: $(cat "$tmp/err")"
echo "quickstart work directories: ok"
