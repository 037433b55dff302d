#!/usr/bin/env bash
# Sets up, then runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/pytest -q tests "$@"
