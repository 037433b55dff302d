#!/usr/bin/env bash
# Sets up, then runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
# Test files run in parallel worker processes (pytest-xdist), one file per worker at a time so that
# a file's module fixtures (converted models, driver builds) are made once: as many workers as
# cores, at most 4 (each holds torch and TVM in memory). QNNPY_TEST_WORKERS overrides; 0 runs serially.
WORKERS=${QNNPY_TEST_WORKERS:-$(n=$(nproc); echo $(( n < 4 ? n : 4 )))}
exec .venv/bin/python -P -m pytest -q -n "$WORKERS" --dist loadfile tests "$@"  # -P: import the installed qnnpy, not the clone's source tree
