#!/usr/bin/env bash
# Creates .venv with the pinned test/demo dependencies and builds qnnpy into it.
# Idempotent: a second run only rebuilds qnnpy.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

# pip, minus this machine's notes about absent local index folders.
pip_quiet() { .venv/bin/python -m pip -q "$@" 2> >(grep -v "^WARNING: Location" >&2); }

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch, torchvision, tvm, pytest, pybind11, scikit_build_core, nbclient, nbformat, ipykernel, matplotlib, sklearn, ai_edge_litert" 2>/dev/null; then
  echo "[setup] installing pinned dependencies (torch, torchvision, apache-tvm, build tools, notebook and example tools)"
  pip_quiet install -r requirements-test.txt
fi
echo "[setup] building qnnpy (C++ core)"
pip_quiet install --no-build-isolation .
