#!/usr/bin/env bash
# Creates .venv and installs qnnpy into it as the README says, pip install '.[tvm]' with build isolation (the
# build fetches apache-tvm-ffi and builds the TVM kernel library).
#   (no flag)  the demo's environment: the pins of requirements-demo.txt (torch, torchvision, apache-tvm).
#   --test     the test environment: requirements-test.txt (the demo's pins plus torchao, transformers,
#              executorch, LiteRT, atheris, jupyter...), and, as root with apt, the Debian tools some tests
#              need: clang with its libFuzzer/sanitizer runtimes (tests/test_fuzzing.py), the AArch64 cross
#              compiler and qemu-user (tests/test_kernel_driver.py), and TVM's AArch64 runtime from PyPI
#              (tests/test_deploy_aarch64.py). scripts/test.sh passes it.
# Idempotent: what is installed is not installed again, and qnnpy is rebuilt only when its sources changed
# since the last build (a hash of src/, qnnpy/, cmake/, CMakeLists.txt and pyproject.toml in .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TEST_ENV=0
for arg in "$@"; do
  case "$arg" in
    --test) TEST_ENV=1 ;;
    *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
  esac
done

# pip, minus this machine's notes about absent local index folders.
pip_quiet() { .venv/bin/python -m pip -q "$@" 2> >(grep -v "^WARNING: Location" >&2); }

if [ "$TEST_ENV" = 1 ]; then
  APT_TOOLS="clang libclang-rt-14-dev g++-aarch64-linux-gnu qemu-user"
  fuzzer_runtime() { ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; }
  if ! { command -v clang++ >/dev/null && fuzzer_runtime && command -v aarch64-linux-gnu-g++ >/dev/null \
         && command -v qemu-aarch64 >/dev/null; }; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "[setup] installing $APT_TOOLS (fuzz targets, AArch64 cross build)"
      apt-get install -y -q --no-install-recommends $APT_TOOLS >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends $APT_TOOLS >/dev/null 2>&1; } \
        || echo "[setup] could not install $APT_TOOLS; the tests that need them will be skipped"
    else
      echo "[setup] $APT_TOOLS: not all found and not root with apt; the tests that need them will be skipped"
    fi
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch, torchvision, tvm" 2>/dev/null; then
  echo "[setup] installing the pinned torch, torchvision and apache-tvm (requirements-demo.txt)"
  pip_quiet install -r requirements-demo.txt
fi
if [ "$TEST_ENV" = 1 ]; then
  if ! .venv/bin/python -c "import pytest, xdist, nbclient, nbformat, ipykernel, matplotlib, sklearn, ai_edge_litert, atheris, torchao, transformers, ruamel.yaml, tabulate" 2>/dev/null; then
    echo "[setup] installing the test requirements (requirements-test.txt: torchao, transformers, notebook and example tools)"
    pip_quiet install -r requirements-test.txt
  fi
  if ! .venv/bin/python -c "import executorch" 2>/dev/null; then
    echo "[setup] installing executorch 1.5.1 (the XNNPACK reference of tests/model_sweep.py), without its dependencies"
    pip_quiet install --no-deps executorch==1.5.1
  fi
fi

# The sources qnnpy's wheel is made of; the hash of the last build is kept in .venv.
source_hash() {
  find src qnnpy cmake CMakeLists.txt pyproject.toml -type f ! -path "*/__pycache__/*" ! -name "*.pyc" -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d" " -f1
}
STAMP=.venv/qnnpy-source-hash
HASH=$(source_hash)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$HASH" ] \
   && (cd .venv && bin/python -c "import qnnpy._core" 2>/dev/null); then
  echo "[setup] qnnpy is installed from these sources already (no rebuild)"
else
  echo "[setup] building qnnpy (C++ core and TVM kernel library): pip install '.[tvm]'"
  rm -f "$STAMP"
  pip_quiet install '.[tvm]'
  echo "$HASH" > "$STAMP"
fi

# TVM's runtime for AArch64 (the apache-tvm and apache-tvm-ffi AArch64 wheels of the versions installed here), kept
# in qnnpy's cache: the deploy folders of tests/test_deploy_aarch64.py need it. Fetched once.
if [ "$TEST_ENV" = 1 ] && command -v aarch64-linux-gnu-g++ >/dev/null; then
  .venv/bin/python -P -m qnnpy.tvm_bridge.deploy aarch64-linux-gnu >/dev/null \
    || echo "[setup] could not fetch TVM's AArch64 runtime from PyPI; tests/test_deploy_aarch64.py will fail"
fi
