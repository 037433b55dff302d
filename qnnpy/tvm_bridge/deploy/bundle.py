"""Deploy folders for another CPU architecture: a module compiled by TVM for the board, with what runs it there.

``write_bundle(module, "bundle/", triple="aarch64-linux-gnu", form="integer")`` writes::

    bundle/model.so                   the module compiled by TVM for the target (LLVM, cross-linked), params bound
    bundle/run                        run_model.cc built for the target: run MODEL.so INPUT.npy... OUTPUT.npy
    bundle/lib/libtvm_runtime.so      TVM's runtime (the Relax VM) for the target, of the TVM version here
    bundle/lib/libtvm_ffi.so
    bundle/lib/libqnnpy_tvm_kernels.so   the kernels form only: qnnpy's kernel library built for the target
    bundle/README.txt                 what was built, and how to run it

Everything finds its libraries through ``$ORIGIN``, so the folder runs wherever it is copied. Built with the
Debian cross toolchain (``g++-aarch64-linux-gnu``); TVM's runtime comes from the apache-tvm AArch64 wheels
(:mod:`qnnpy.tvm_bridge.deploy.cross_runtime`). The kernels form's kernel library is built from qnnpy's sources
(``scripts/cross_build_tvm_kernels.sh``) and passed as ``kernel_library``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qnnpy.cross_targets import cross_target_named
from qnnpy.optional_tvm import tvm_module
from qnnpy.profiles import resolve_profile
from qnnpy.tvm_bridge import kernel_form
from qnnpy.tvm_bridge.deploy import cross_runtime
from qnnpy.tvm_bridge.runner import FORMS, compile_form

if TYPE_CHECKING:
    from qnnpy.module import QDQModule

_RUNNER_SOURCE = Path(__file__).with_name("run_model.cc")
_KERNEL_LIBRARY = "libqnnpy_tvm_kernels.so"


def cross_target(triple: str, dotprod: bool = True) -> Any:
    """The LLVM target TVM compiles for ``triple``: AArch64 with NEON and, with ``dotprod``, the Armv8.2
    dot-product instructions (Cortex-A55/A76 and newer, Neoverse, Graviton 2+, Apple M1+); without it, every
    Armv8 core (Cortex-A53/A72, Raspberry Pi 3/4)."""
    tvm = tvm_module()
    cross_target_named(triple)
    return tvm.target.Target({"kind": "llvm", "mtriple": triple, "mattr": ["+neon", "+dotprod"] if dotprod else ["+neon"]})


def write_bundle(module: "QDQModule", directory: str | os.PathLike, triple: str = "aarch64-linux-gnu",
                 form: str = "integer", profile: str | None = None, dotprod: bool = True,
                 kernel_library: str | os.PathLike | None = None,
                 progress: Callable[[str], None] | None = None) -> Path:
    """Compile ``module`` for ``triple`` in ``form`` (``"integer"``: TVM's own code, no qnnpy library on the
    board; ``"kernels"``: calls of qnnpy's kernel library, ``kernel_library`` being that library built for the
    target; ``"qdq"``: the float module) under ``profile`` (default :func:`qnnpy.profiles.default_profile`) and
    write the deploy folder ``directory`` (module docstring). The integer and kernels forms compute on the board
    what ``module.run(x, profile=profile)`` computes here, bit for bit. ``dotprod``: see :func:`cross_target`
    (the kernels form picks its kernels on the board at run time either way). Returns ``directory``."""
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {FORMS}")
    target = cross_target(triple, dotprod)
    compiler = _cross_compiler(triple)
    kernels = _checked_kernel_library(kernel_library, triple) if form == "kernels" else None
    profile = resolve_profile(profile)
    runtime = cross_runtime.runtime_dir(triple, progress)

    out = Path(directory)
    lib = out / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    for library in [runtime / name for name in cross_runtime.LIBRARIES] + ([kernels] if kernels else []):
        shutil.copy2(library, lib / library.name)

    if progress:
        progress(f"compiling {len(module.nodes())} ops in the {form} form for {triple} ({', '.join(target.attrs['mattr'])})")
    export_model(module, out / "model.so", triple, form, profile, dotprod)
    if progress:
        progress(f"building the runner {out / 'run'}")
    _build_runner(compiler, out / "run", lib)
    (out / "README.txt").write_text(_readme(triple, form, profile, target, kernels is not None))
    return out


def export_model(module: "QDQModule", path: str | os.PathLike, triple: str = "aarch64-linux-gnu",
                 form: str = "integer", profile: str | None = None, dotprod: bool = True) -> Path:
    """Compile ``module`` for ``triple`` and write the library alone (what a deploy folder holds as ``model.so``;
    the kernels form's library is found in ``lib/`` beside it). The folder's runner runs any such library."""
    tvm_module()
    from tvm.support import cc

    target = cross_target(triple, dotprod)
    compiler = _cross_compiler(triple)
    profile = resolve_profile(profile)
    if form == "kernels":
        _, executable = kernel_form.compile_kernels(module, profile, target)
        lib = Path(path).parent / "lib"
        link = [f"-L{lib}", "-Wl,--no-as-needed", f"-l:{_KERNEL_LIBRARY}", "-Wl,-rpath,$ORIGIN/lib"]
    else:
        _, executable = compile_form(module, form, profile, target)
        link = []
    # get_target_triple: the executable's constants are packed into an object file for the target's triple (a
    # kernels-form module has no TIR function to take it from).
    executable.export_library(str(path), fcompile=cc.cross_compiler(compiler, options=link, get_target_triple=lambda: triple))
    return Path(path)


def _cross_compiler(triple: str) -> str:
    compiler = cross_target_named(triple).compiler
    if shutil.which(compiler) is None:
        raise RuntimeError(f"{compiler} not found: install the cross toolchain (Debian/Ubuntu: apt-get install "
                           f"g++-{triple})")
    return compiler


def _checked_kernel_library(path: str | os.PathLike | None, triple: str) -> Path:
    """The kernels form's library for ``triple``: given, a file, an ELF shared object of the target's machine."""
    hint = ("build it from qnnpy's sources with scripts/cross_build_tvm_kernels.sh, or choose the integer form "
            "(TVM's own code, no qnnpy library on the board)")
    if path is None:
        raise ValueError(f"the kernels form for {triple} needs qnnpy's kernel library built for it "
                         f"(kernel_library=, qnnpy build --kernel-library): {hint}")
    library = Path(path)
    if not library.is_file():
        raise FileNotFoundError(f"kernel library {library}: no such file ({hint})")
    header = library.read_bytes()[:20]
    if header[:4] != b"\x7fELF" or int.from_bytes(header[18:20], "little") != cross_target_named(triple).elf_machine:
        raise ValueError(f"kernel library {library} is not a shared library for {triple} ({hint})")
    return library


def _build_runner(compiler: str, output: Path, lib: Path) -> None:
    import tvm_ffi

    command = [compiler, "-std=c++17", "-O2", str(_RUNNER_SOURCE), "-o", str(output),
               f"-I{tvm_ffi.libinfo.find_include_path()}", f"-I{tvm_ffi.libinfo.find_dlpack_include_path()}",
               f"-L{lib}", "-Wl,--no-as-needed", "-l:libtvm_runtime.so", "-l:libtvm_ffi.so", "-Wl,-rpath,$ORIGIN/lib"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building the runner failed:\n{' '.join(command)}\n{done.stderr[-3000:]}")


def _readme(triple: str, form: str, profile: str, target: Any, with_kernels: bool) -> str:
    versions = cross_runtime.installed_versions()
    kernels = "\n  lib/libqnnpy_tvm_kernels.so  qnnpy's kernel library (the kernels form calls it)" if with_kernels else ""
    return f"""qnnpy deploy folder for {triple}
form {form}, arithmetic profile {profile}, TVM target llvm -mtriple={triple} -mattr={','.join(target.attrs['mattr'])}
TVM runtime of apache-tvm {versions['apache-tvm']}, apache-tvm-ffi {versions['apache-tvm-ffi']}

Copy this folder to the board and run:
  ./run model.so input.npy output.npy          (options: --threads N; several inputs: in the module's order)
The inputs are .npy files of the module's input dtype and shape; a module with several outputs writes
output.npy, output.1.npy, ...

Files:
  model.so                  the module compiled by TVM (Relax VM executable, params bound)
  run                       the runner (source: qnnpy/tvm_bridge/deploy/run_model.cc)
  lib/libtvm_runtime.so, lib/libtvm_ffi.so   TVM's runtime{kernels}
"""
