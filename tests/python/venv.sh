# Sourced by tests/python/run.sh and tests/browser/run.sh: makes the venv $VENV (with
# $PYTHON, default python3) when it is missing, and installs the requirements file $REQ into
# it only when they (or the interpreter) changed since the last install.
if [ ! -x "$VENV/bin/python" ]; then
  echo "run.sh: creating venv $VENV" >&2
  mkdir -p "$(dirname "$VENV")"
  "${PYTHON:-python3}" -m venv "$VENV"
fi
venv_stamp="$VENV/.requirements.stamp"
venv_want="$( { cat "$REQ"; "$VENV/bin/python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$venv_stamp" 2>/dev/null || true)" != "$venv_want" ]; then
  echo "run.sh: installing $REQ into $VENV" >&2
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQ"
  echo "$venv_want" >"$venv_stamp"
fi
