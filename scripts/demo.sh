#!/usr/bin/env bash
# Sets up, then converts the quantized ResNet-18, runs it in TVM and compares with PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -P -m qnnpy.demo "$@"  # -P: import the installed qnnpy, not the source tree
