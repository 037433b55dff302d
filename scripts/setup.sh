#!/usr/bin/env bash
# Creates .venv with the pinned test/demo dependencies and builds qnnpy into it.
# Idempotent: a second run only rebuilds qnnpy.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

# pip, minus this machine's notes about absent local index folders.
pip_quiet() { .venv/bin/python -m pip -q "$@" 2> >(grep -v "^WARNING: Location" >&2); }

# clang and its libFuzzer/sanitizer runtimes for the fuzz targets (tests/test_fuzzing.py).
# Installed only as root where apt exists; elsewhere the libFuzzer tests skip, saying why.
fuzzer_runtime() { ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; }
if ! { command -v clang++ >/dev/null && fuzzer_runtime; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[setup] installing clang and libclang-rt-14-dev (fuzz targets)"
    apt-get install -y -q clang libclang-rt-14-dev >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q clang libclang-rt-14-dev >/dev/null 2>&1; } \
      || echo "[setup] could not install clang; the libFuzzer tests will be skipped"
  else
    echo "[setup] clang/libFuzzer not found and not root with apt: the libFuzzer tests will be skipped"
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch, torchvision, tvm, pytest, pybind11, scikit_build_core, nbclient, nbformat, ipykernel, matplotlib, sklearn, ai_edge_litert, atheris" 2>/dev/null; then
  echo "[setup] installing pinned dependencies (torch, torchvision, apache-tvm, build tools, notebook and example tools)"
  pip_quiet install -r requirements-test.txt
fi
echo "[setup] building qnnpy (C++ core)"
pip_quiet install --no-build-isolation .
