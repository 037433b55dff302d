"""qnnpy_kernel_tests, the C++ driver of the kernels and the runtime (src/kernel_tests), built
natively and cross-built for AArch64 (Debian's g++-aarch64-linux-gnu) and run under qemu-user:

* every SIMD kernel against its scalar twin, bit for bit (AVX2 here; NEON and NEON + sdot under
  qemu, the latter on an emulated CPU with the dot-product extension, the former also on one
  without it, where the runtime must pick plain NEON);
* the avxvnni set's VEX code, which no CPU here runs, against its tested EVEX twin in the
  driver's disassembly: the same instructions but for vpdpbusd's encoding;
* the worker pool: each body of a job at most once, also when another thread wakes the pool;
* small graphs and whole models (ResNet-18, MobileNetV2 at small inputs) converted by the x86
  Python package, run by the driver: every output and intermediate tensor equal, byte for byte,
  to the x86 results, under every profile.

The AArch64 tests are skipped, with the reason, where the cross tools are absent
(scripts/install_cross_tools.sh installs them).
"""
from __future__ import annotations

import platform
import shutil
from pathlib import Path

import numpy as np
import pytest

import qnnpy
from qnnpy import _core
from profile_cases import RULE_PROFILES

import amx_encoding
import disassembly
import kernel_driver
import sanitized_build
from small_models import Head, Residual, conv_cases, quantized, small_zoo_modules

# qemu's CPU models: "max" has every extension (asimddp: sdot), "cortex-a53" is Armv8.0 (no sdot).
CPU_DEFAULT_ISA = {"max": "neon_dot", "cortex-a53": "neon"}


@pytest.fixture(scope="module")
def native_driver(request) -> list[str]:
    return [str(kernel_driver.build_driver(request.config.cache.mkdir("qnnpy_kernel_tests_native"), False))]


@pytest.fixture(scope="module")
def aarch64_driver(request) -> Path:
    reason = kernel_driver.missing_cross_tools()
    if reason:
        pytest.skip(f"AArch64 cross build not possible: {reason}")
    return kernel_driver.build_driver(request.config.cache.mkdir("qnnpy_kernel_tests_aarch64"), True)


@pytest.fixture(scope="module")
def sanitized_driver() -> list[str]:
    """The driver over a core built with AddressSanitizer and UBSan (clang's, in the fuzz targets' build:
    tests/sanitized_build.py): any report ends the process with an error (CMakeLists.txt:
    -fno-sanitize-recover=all)."""
    return [str(sanitized_build.build() / "qnnpy_kernel_tests")]


KERNEL_FAMILIES = ("gemm", "requantize", "depthwise", "elementwise", "pool")


@pytest.fixture(scope="module")
def scalar_only_driver(request) -> list[str]:
    cache = request.config.cache.mkdir("qnnpy_kernel_tests_scalar_only")
    return [str(kernel_driver.build_driver(cache, False, simd=False))]


def _x86_simd_isas() -> list[str]:
    """The x86 SIMD kernel sets this CPU runs (avxvnni: with AVX-VNNI, or AVX-512 VNNI's encoding, where the
    Python package's build has it; the driver's build uses the same compiler and assembler)."""
    avxvnni = (_core.cpu_has_avx_vnni() or _core.cpu_has_avx512_vnni()) and _core.avxvnni_kernels_built
    return (["avx2"] * _core.cpu_has_avx2() + ["avxvnni"] * avxvnni + ["avx512vnni"] * _core.cpu_has_avx512_vnni()
            + ["amx"] * _core.cpu_has_amx())


def _x86_test_isas() -> list[str]:
    """The runnable x86 SIMD sets and, on x86-64, amx_model (the amx GEMM driver on the software model of the tiles,
    which runs on any CPU but is never offered as runnable)."""
    return _x86_simd_isas() + ["amx_model"] * (platform.machine() in ("x86_64", "AMD64"))


def _passed(done) -> str:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _assert_twins_passed(out: str, isa: str) -> None:
    """Every kernel family of `isa` ran checks and none failed (driver lines "isa family: N checks, F failed")."""
    for family in KERNEL_FAMILIES:
        line = next((l for l in out.splitlines() if l.startswith(f"{isa} {family}: ")), None)
        assert line is not None, f"no {isa} {family} checks ran:\n{out}"
        assert line.endswith(" 0 failed") and not line.startswith(f"{isa} {family}: 0 checks"), line


# The native driver without sanitizers repeats what the ASan/UBSan one (last test) checks, on an
# uninstrumented build of its own (one more build of the core), so it is left to `-m slow`.
@pytest.mark.slow
def test_native_driver_runs_every_simd_kernel_against_its_scalar_twin(native_driver):
    out = _passed(kernel_driver.run(native_driver, "twins", *_x86_test_isas(), "--seed", "7"))
    for isa in _x86_test_isas():
        _assert_twins_passed(out, isa)
    assert "twins: all passed" in out


@pytest.mark.parametrize("cpu", sorted(CPU_DEFAULT_ISA))
def test_aarch64_driver_picks_sdot_only_where_the_cpu_reports_it(aarch64_driver, cpu):
    out = _passed(kernel_driver.run(kernel_driver.aarch64_command(aarch64_driver, cpu), "info"))
    assert f"default_isa {CPU_DEFAULT_ISA[cpu]}\n" in out
    assert f"cpu_has_neon_dot {int(cpu == 'max')}\n" in out
    assert "cpu_has_avx2 0\n" in out


@pytest.mark.parametrize("cpu", sorted(CPU_DEFAULT_ISA))
def test_aarch64_neon_kernels_equal_their_scalar_twins_under_qemu(aarch64_driver, cpu):
    out = _passed(kernel_driver.run(kernel_driver.aarch64_command(aarch64_driver, cpu), "twins", "--seed", "11"))
    isas = ["neon", "neon_dot"] if cpu == "max" else ["neon"]
    for isa in isas:
        _assert_twins_passed(out, isa)
    assert ("neon_dot gemm" in out) == (cpu == "max")
    assert "twins: all passed" in out


def test_aarch64_neon_dot_is_refused_on_a_cpu_without_sdot(aarch64_driver):
    done = kernel_driver.run(kernel_driver.aarch64_command(aarch64_driver, "cortex-a53"), "twins", "neon_dot")
    assert done.returncode == 1
    assert "isa 'neon_dot' requested but this CPU has no dot-product extension" in done.stderr


def _x86_results(graph: _core.Graph, x: np.ndarray, profile: str, isa: str) -> dict[str, np.ndarray]:
    outs, captured = _core.Executor(graph, profile, isa, 1).run([x], True)
    return {**{f"output:{i}": o for i, o in enumerate(outs)}, **captured}


def _driver_results(command: list[str], graph: _core.Graph, x: np.ndarray, profile: str, isa: str,
                    tmp: Path) -> dict[str, np.ndarray]:
    (tmp / "graph.qnnpy").write_bytes(bytes(graph.serialize()))
    kernel_driver.write_inputs(tmp / "input.bin", [x])
    _passed(kernel_driver.run(command, "run", str(tmp / "graph.qnnpy"), str(tmp / "input.bin"), str(tmp / "out.bin"),
                              profile, isa))
    return kernel_driver.read_results(tmp / "out.bin")


def _assert_same_bytes(want: dict[str, np.ndarray], got: dict[str, np.ndarray], what: str) -> None:
    assert sorted(want) == sorted(got), what
    for name, a in want.items():
        b = got[name]
        assert a.dtype == b.dtype and a.shape == b.shape, f"{what}: {name}"
        if a.tobytes() != b.tobytes():
            np.testing.assert_array_equal(a, b, err_msg=f"{what}: {name}")
            pytest.fail(f"{what}: {name} differs in its bytes (e.g. the sign of a zero or a NaN payload)")


def _small_graphs() -> dict[str, tuple[_core.Graph, np.ndarray]]:
    graphs = {}
    bodies = {name: (body, shape, per_channel, fuse) for name, (body, shape, per_channel, fuse) in conv_cases().items()}
    bodies["head_pools_linear"] = (Head(linear_relu=True), (3, 13, 11), True, None)
    bodies["residual_add_relu"] = (Residual(relu=True), (3, 10, 9), True, None)
    for name, (body, shape, per_channel, fuse) in bodies.items():
        model, x = quantized(body, shape, per_channel, fuse)
        graphs[name] = (qnnpy.from_torch(model, (x,)).graph, x.numpy())
    return graphs


@pytest.fixture(scope="module")
def small_graphs() -> dict[str, tuple[_core.Graph, np.ndarray]]:
    return _small_graphs()


@pytest.mark.slow  # as the native twin test above
@pytest.mark.parametrize("profile", RULE_PROFILES)
def test_native_driver_runs_small_graphs_as_the_python_package_does(native_driver, small_graphs, profile, tmp_path):
    isas = ["scalar"] + _x86_test_isas()
    for name, (graph, x) in small_graphs.items():
        want = _x86_results(graph, x, profile, "scalar")
        for isa in isas:
            got = _driver_results(native_driver, graph, x, profile, isa, tmp_path)
            _assert_same_bytes(want, got, f"{name} native {isa} ({profile})")


@pytest.mark.parametrize("profile", RULE_PROFILES)
def test_aarch64_small_graphs_equal_x86_under_qemu(aarch64_driver, small_graphs, profile, tmp_path):
    command = kernel_driver.aarch64_command(aarch64_driver, "max")
    for name, (graph, x) in small_graphs.items():
        want = _x86_results(graph, x, profile, "scalar")
        for isa in ("scalar", "neon", "neon_dot"):
            got = _driver_results(command, graph, x, profile, isa, tmp_path)
            _assert_same_bytes(want, got, f"{name} aarch64 {isa} ({profile})")


# Whole models at small inputs (the runtime's results do not depend on the size; qemu is slow).
MODEL_INPUTS = {"resnet18": 32, "mobilenet_v2": 64}


@pytest.fixture(scope="module")
def small_models() -> dict[str, tuple[_core.Graph, np.ndarray]]:
    return {name: (module.graph, x) for name, (module, x) in small_zoo_modules(MODEL_INPUTS, seed=5).items()}


@pytest.mark.parametrize("cpu", sorted(CPU_DEFAULT_ISA))
@pytest.mark.parametrize("profile", RULE_PROFILES)
def test_aarch64_whole_models_equal_x86_under_qemu(aarch64_driver, small_models, profile, cpu, tmp_path):
    command = kernel_driver.aarch64_command(aarch64_driver, cpu)
    for name, (graph, x) in small_models.items():
        want = _x86_results(graph, x, profile, "")
        got = _driver_results(command, graph, x, profile, CPU_DEFAULT_ISA[cpu], tmp_path)
        _assert_same_bytes(want, got, f"{name} aarch64 {CPU_DEFAULT_ISA[cpu]} under -cpu {cpu} ({profile})")


@pytest.mark.slow  # a third build of the core (about a minute of CPU time)
def test_scalar_only_build_runs_as_on_an_architecture_without_simd_kernels(scalar_only_driver, small_graphs, tmp_path):
    out = _passed(kernel_driver.run(scalar_only_driver, "info"))
    assert "default_isa scalar\n" in out and "simd_isas\n" in out
    assert "nothing to compare" in _passed(kernel_driver.run(scalar_only_driver, "twins"))
    done = kernel_driver.run(scalar_only_driver, "twins", "avx2")
    assert done.returncode == 1 and "built without the x86-64 AVX2 kernels" in done.stderr
    for name, (graph, x) in small_graphs.items():
        for profile in RULE_PROFILES:
            got = _driver_results(scalar_only_driver, graph, x, profile, "auto", tmp_path)
            _assert_same_bytes(_x86_results(graph, x, profile, "scalar"), got, f"{name} scalar-only build ({profile})")


def test_twins_and_small_graphs_run_clean_under_asan_and_ubsan(sanitized_driver, small_graphs, tmp_path):
    """The twin checks and the small graphs, every profile and ISA, on the instrumented core: no
    sanitizer report (it would end the driver with an error) and the same bytes as the package."""
    out = _passed(kernel_driver.run(sanitized_driver, "twins", *_x86_test_isas(), "--seed", "11"))
    assert "twins: all passed" in out
    for isa in _x86_test_isas():
        _assert_twins_passed(out, isa)
    for isa in ("amx", "amx_model"):
        assert (f"{isa} tiles: " in out) == (isa in _x86_test_isas()), isa
    isas = ["scalar"] + _x86_test_isas()
    for profile in RULE_PROFILES:
        for name, (graph, x) in small_graphs.items():
            want = _x86_results(graph, x, profile, "scalar")
            for isa in isas:
                got = _driver_results(sanitized_driver, graph, x, profile, isa, tmp_path)
                _assert_same_bytes(want, got, f"{name} asan/ubsan {isa} ({profile})")


# The avxvnni set is compiled twice from one template, with vpdpbusd in its VEX (AVX-VNNI) and its
# EVEX (AVX-512 VL + VNNI) encoding (src/kernels/avxvnni/dpbusd.h).
VNNI_VEX, VNNI_EVEX = "(qnnpy::VnniEncoding)0", "(qnnpy::VnniEncoding)1"
VEX_FIRST_BYTES, EVEX_FIRST_BYTE = (0xC4, 0xC5), 0x62


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the avxvnni set is x86-64 code")
@pytest.mark.skipif(not _core.avxvnni_kernels_built, reason="this assembler does not know AVX-VNNI: no avxvnni set")
@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) not found")
def test_avxvnni_vex_code_is_its_evex_twin_but_for_the_encoding(native_driver):
    """The VEX form runs only on AVX-VNNI CPUs, which the test machines may lack (qemu does not
    emulate it either); the twin tests run the EVEX form wherever AVX-512 VNNI is present. Each VEX
    function must be its EVEX twin instruction for instruction, but for vpdpbusd's encoding, and
    hold no EVEX instruction (an AVX-VNNI CPU without AVX-512 would stop at it)."""
    code = disassembly.functions(Path(native_driver[0]))
    pairs = [(name, name.replace(VNNI_VEX, VNNI_EVEX)) for name in code if VNNI_VEX in name]
    for kernel in ("gemm_u8s8_avxvnni<", "gemm_u8s8_runs_avxvnni<", "depthwise_quads_avxvnni<"):
        assert any(kernel in vex for vex, _ in pairs), f"no VEX instantiation of {kernel} in the driver"
    dot_products = 0
    for vex, evex in pairs:
        assert evex in code, f"{vex} has no EVEX twin"
        vex_text = [t.replace("{vex} ", "").replace(VNNI_VEX, VNNI_EVEX) for t in disassembly.normalized(vex, code[vex])]
        assert vex_text == disassembly.normalized(evex, code[evex]), f"{vex} differs from its EVEX twin beyond vpdpbusd's encoding"
        vex_dots = [i for i in code[vex] if "vpdpbusd" in i.text]
        evex_dots = [i for i in code[evex] if "vpdpbusd" in i.text]
        assert len(vex_dots) == len(evex_dots)
        assert all(i.first_byte in VEX_FIRST_BYTES and i.text.startswith("{vex} ") for i in vex_dots), vex
        assert all(i.first_byte == EVEX_FIRST_BYTE for i in evex_dots), evex
        assert not [i.text for i in code[vex] if i.first_byte == EVEX_FIRST_BYTE], f"EVEX code in {vex}"
        dot_products += len(vex_dots)
    assert dot_products > 0


# Where the tile instructions may be: the amx GEMM driver on InstructionTiles, its entry points, the tile product
# of the tests and the tdpbusd peak loop. The same driver on the software model must hold none (it runs anywhere).
AMX_INSTRUCTION_CODE = ("InstructionTiles", "_amx(", "amx_loop", "peak_amx_gmacs")
AMX_MODEL_CODE = ("ModelTiles", "_amx_model(")


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the amx set is x86-64 code")
@pytest.mark.skipif(not _core.amx_kernels_built, reason="this compiler or assembler does not know AMX: no amx set")
@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) not found")
def test_amx_code_holds_the_tile_instructions_encoded_as_the_sdm_gives_them(native_driver):
    """The amx set's instructions run only on CPUs with AMX-INT8, which the test machines may lack (qemu does not
    emulate them); its GEMM driver runs everywhere on the software model of the tiles. So the build is checked
    from its disassembly: every tile instruction the driver needs is there, each encoded as tests/amx_encoding.py
    says (VEX 0F38, W0, L0, the pp and opcode of that instruction, so tdpbusd is u8 x s8), only in the code on
    the instructions; the 2 x 2 block multiplies A tiles tmm4, tmm5 by B tiles tmm6, tmm7 into C tiles tmm0-3."""
    code = disassembly.functions(Path(native_driver[0]))
    seen: dict[str, int] = {}
    block_products = None
    for name, instructions in code.items():
        tiles = [i for i in instructions if amx_encoding.is_tile_instruction(i.text.split(" ")[0])]
        if not tiles:
            continue
        assert any(part in name for part in AMX_INSTRUCTION_CODE), f"tile instructions in {name}"
        assert not any(part in name for part in AMX_MODEL_CODE), f"tile instructions in the model's {name}"
        for i in tiles:
            mnemonic = i.text.split(" ")[0]
            error = amx_encoding.encoding_error(mnemonic, i.encoding)
            assert error is None, f"{name}: {i.text} ({i.encoding.hex(' ')}): {error}"
            seen[mnemonic] = seen.get(mnemonic, 0) + 1
        if "multiply_block<qnnpy::amx::InstructionTiles, true, true>" in name:
            block_products = {(o.c, o.a, o.b) for o in (amx_encoding.tdpbusd_operands(i.encoding)
                                                          for i in tiles if i.text.startswith("tdpbusd"))}
    assert sorted(seen) == sorted(amx_encoding.MNEMONICS), seen
    assert block_products == {(0, 4, 6), (1, 4, 7), (2, 5, 6), (3, 5, 7)}
    model = [name for name in code if "ModelTiles" in name]
    assert model, "no code of the driver on the tile model in the driver"


def test_the_amx_encoding_check_refuses_the_neighbouring_encodings():
    """tests/amx_encoding.py against encodings it must refuse: tdpbusd's siblings of other signedness (only pp
    differs), W1, VEX.256, another map, a tileloadd without its SIB byte, and the right ones (from the SDM)."""
    right = {"tdpbusd": "c4e2495ec4", "tileloadd": "c4a27b4b2436", "tilestored": "c4c27a4b0400",
             "ldtilecfg": "c4e27849442440", "tilerelease": "c4e27849c0", "tilezero": "c4e27b49c8"}
    for mnemonic, hex_code in right.items():
        assert amx_encoding.encoding_error(mnemonic, bytes.fromhex(hex_code)) is None, mnemonic
    wrong = {"tdpbusd": ["c4e24b5ec4",  # pp F2: tdpbssd
                         "c4e24a5ec4",  # pp F3: tdpbsud
                         "c4e2485ec4",  # pp NP: tdpbuud
                         "c4e2c95ec4",  # W1
                         "c4e24d5ec4",  # L1
                         "c4e3495ec4",  # map 0F3A
                         "62f2495ec4"],  # not VEX
             "tileloadd": ["c4e27b4b0f", "c4e27a4b2436"],  # (%rdi), no SIB; pp F3 (a store's)
             "tilerelease": ["c4e27849c8"]}
    for mnemonic, codes in wrong.items():
        for hex_code in codes:
            assert amx_encoding.encoding_error(mnemonic, bytes.fromhex(hex_code)) is not None, (mnemonic, hex_code)
    assert amx_encoding.tdpbusd_operands(bytes.fromhex("c4e2495ec4")) == amx_encoding.TileOperands(c=0, a=4, b=6)


def test_worker_pool_runs_each_body_at_most_once_per_job(sanitized_driver):
    """A helper that has run its body and blocked, woken by wake_workers from another thread (as a
    second executor's run does) while the job is still open, must not run its body again: callers
    that split work statically would count it twice (src/kernel_tests/pool_check.cpp)."""
    assert "pool: all passed" in _passed(kernel_driver.run(sanitized_driver, "pool"))
