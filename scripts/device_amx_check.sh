#!/usr/bin/env bash
# The amx kernel set's checks and timings on a CPU with AMX-INT8 (an Intel Xeon from Sapphire Rapids on), in
# one run: what the device tool's machine runs (no network; results come back from files under $OUT).
#
#   OUT=DIR bash scripts/device_amx_check.sh           (the device tool sets OUT; 15 minutes of device time a
#                                                      session: this script takes about 6-9 of them)
#   QNNPY_DEVICE_QUICK=1 ...                           a smoke run: 2 rounds, MobileNetV2 only, 1 thread
#   QNNPY_DEVICE_BUDGET_S=570                          seconds for all steps (run it with the tool's timeout_s=600)
#
# Steps, each logged in $OUT/log.txt with its duration; a step that fails is written down and the next runs:
#   1. cpu.txt: the CPU (lscpu, the flags the kernels use) and the Python packages found.
#   2. C++ core and qnnpy_kernel_tests, built with CMake (-O3) in /tmp.
#   3. kernel_tests.txt: `info` (whether amx runs, or why not), the twin checks of the amx set on the
#      instructions (skipped, saying why, where the CPU or OS has no AMX), of amx_model and avx512vnni, and the
#      peak loops (tdpbusd, vpdpbusd on zmm and ymm, AVX2).
#   4. The Python extension (CMake again, QNNPY_PYTHON=ON) into a copy of the qnnpy package in /tmp, if
#      pybind11 and Python's headers are found: pybind11 from the Python used, else from $PYBIND11_DIR, else
#      from a carried .venv/lib/python3*/site-packages/pybind11 (the device tool's `carry` brings it).
#   5. bench.txt, <cpu>.json, RESULTS.md: benchmarks/bench_latency.py, 1 and 2 threads, qnnpy (amx, and
#      avx512vnni with --also-isa) against PyTorch eager under each engine and PT2E + torch.compile; needs
#      torchvision (and torchao or torch.ao's PT2E for the PT2E path). Copy RESULTS.md's section and the
#      JSON file into benchmarks/ to publish them.
#   6. pytest.txt: the amx tests of the test suite on the instructions (tests/test_amx.py, test_gemm_vnni.py,
#      the twin tests of test_kernel_twins.py), if pytest is installed, in the time left.
# At most 8 files come back from $OUT; this writes 7.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
OUT=${OUT:?set OUT to the folder the results go to}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
: > "$LOG"
QUICK=${QNNPY_DEVICE_QUICK:-0}
# Seconds for the whole script: the device tool stops a command after 600 s (its files under $OUT still come
# back, each step's as far as it got).
BUDGET=${QNNPY_DEVICE_BUDGET_S:-570}
if [ -x /opt/torch/.venv/bin/python ]; then export PATH=/opt/torch/.venv/bin:$PATH; fi
PYTHON=${PYTHON:-$(command -v python3 || command -v python)}
BUILD=/tmp/qnnpy_amx_build
PYBUILD=/tmp/qnnpy_amx_pybuild
SITE=/tmp/qnnpy_amx_site
JOBS=$(nproc)

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
# step NAME SECONDS FILE FUNCTION: runs the shell function under a time limit (at most what is left of the
# script's budget), its output into FILE (the log if FILE is -), and logs its status and duration.
step() {
  local name=$1 limit=$2 file=$3 fn=$4 start=$SECONDS status left=$((BUDGET - SECONDS))
  [ "$file" = - ] && file=$LOG
  if [ "$left" -lt 20 ]; then
    log "== $name: SKIPPED, ${left} s of the ${BUDGET} s budget left"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  log "== $name (at most $limit s)"
  timeout "$limit" bash -c "$fn" >> "$file" 2>&1
  status=$?
  log "== $name: $([ $status = 0 ] && echo ok || echo "FAILED (exit $status)") in $((SECONDS - start)) s"
  return $status
}

cpu_report() {
  lscpu 2>/dev/null || true
  echo "flags used by the kernels:" $(grep -m1 -o -w -E 'avx2|avx512f|avx512_vnni|avx_vnni|amx_tile|amx_int8|amx_bf16' /proc/cpuinfo | sort -u)
  "$PYTHON" --version
  "$PYTHON" - <<'PY'
import importlib
for name in ("numpy", "torch", "torchvision", "torchao", "tvm", "pybind11", "pytest"):
    try:
        module = importlib.import_module(name)
        print(f"{name} {getattr(module, '__version__', '?')}")
    except Exception as e:  # noqa: BLE001 - absent, or broken: either way it is reported
        print(f"{name}: not available ({type(e).__name__})")
PY
}

build_core() {
  cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DQNNPY_PYTHON=OFF -DQNNPY_KERNEL_TESTS=ON \
    $(command -v ninja > /dev/null && echo -G Ninja) &&
  cmake --build "$BUILD" --target qnnpy_kernel_tests --parallel "$JOBS"
}

kernel_checks() {
  local driver=$BUILD/qnnpy_kernel_tests
  "$driver" info
  if "$driver" info | grep -q "^amx available"; then
    "$driver" twins amx --seed 31
    "$driver" twins amx --seed 32
  else
    echo "amx twin checks on the instructions: SKIPPED, $("$driver" info | grep '^amx ')"
  fi
  "$driver" twins amx_model avx512vnni --seed 31
  "$driver" peak 1.0
}

pybind11_dir() {
  local dir
  dir=$("$PYTHON" -m pybind11 --cmakedir 2>/dev/null) && { echo "$dir"; return; }
  [ -n "${PYBIND11_DIR:-}" ] && { echo "$PYBIND11_DIR"; return; }
  for dir in "$REPO"/.venv/lib/python3*/site-packages/pybind11/share/cmake/pybind11; do
    [ -d "$dir" ] && { echo "$dir"; return; }
  done
  return 1
}

build_python() {
  local dir
  dir=$(pybind11_dir) || {
    echo "SKIPPED: pybind11's CMake files not found (pip's pybind11, \$PYBIND11_DIR, or carry" \
      ".venv/lib/python3*/site-packages/pybind11)"
    return 1
  }
  cmake -S "$REPO" -B "$PYBUILD" -DCMAKE_BUILD_TYPE=Release -DQNNPY_PYTHON=ON -DQNNPY_TVM_KERNELS=OFF \
    -Dpybind11_DIR="$dir" -DPython_EXECUTABLE="$PYTHON" $(command -v ninja > /dev/null && echo -G Ninja) &&
  cmake --build "$PYBUILD" --target _core --parallel "$JOBS" || return 1
  rm -rf "$SITE" && mkdir -p "$SITE" && cp -r "$REPO/qnnpy" "$SITE/qnnpy" && cp "$PYBUILD"/_core*.so "$SITE/qnnpy/" &&
  PYTHONPATH=$SITE "$PYTHON" -P -c "from qnnpy import _core; print('qnnpy imported:', _core.default_isa(), _core.runnable_simd_isas())"
}

run_pytest() {
  "$PYTHON" -c "import pytest" 2>/dev/null || { echo "SKIPPED: pytest is not installed"; return 1; }
  local select=""
  [ "$QUICK" = 1 ] && select="-k amx"
  # The package under test is the copy in $SITE (tests import the installed qnnpy); -p no:cacheprovider: the
  # tree may be read-only.
  PYTHONPATH=$SITE "$PYTHON" -P -m pytest -q -p no:cacheprovider -o addopts="" $select \
    tests/test_amx.py tests/test_gemm_vnni.py tests/test_kernel_twins.py
}

run_bench() {
  local args=(--save-to "$OUT" --also-isa avx512vnni --no-tvm)
  if [ "$QUICK" = 1 ]; then args+=(--runs 2 --threads 1 --models mobilenet_v2); else args+=(--runs 15 --threads 1 2); fi
  PYTHONPATH=$SITE "$PYTHON" -P benchmarks/bench_latency.py "${args[@]}"
}

export REPO OUT PYTHON BUILD PYBUILD SITE JOBS QUICK
export -f build_core kernel_checks pybind11_dir build_python run_pytest run_bench
log "qnnpy device check in $REPO, python $PYTHON, $JOBS cores, quick=$QUICK"
cpu_report > "$OUT/cpu.txt" 2>&1
cat "$OUT/cpu.txt" >> "$LOG"
# The timings before the pytest run: they matter most, and pytest's share of the budget is what is left.
if step "build the core and qnnpy_kernel_tests" 180 - build_core; then
  step "kernel checks (kernel_tests.txt)" 90 "$OUT/kernel_tests.txt" kernel_checks
fi
if step "build the Python extension" 180 - build_python; then
  step "bench_latency (bench.txt)" 330 "$OUT/bench.txt" run_bench
  step "pytest (pytest.txt)" 240 "$OUT/pytest.txt" run_pytest
else
  log "no Python extension: no pytest and no model timings (why: above)"
fi
log "done"
