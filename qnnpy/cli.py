"""The ``qnnpy`` command: convert a saved quantized PyTorch model, inspect the result, compare it with PyTorch.

Run ``qnnpy --help`` or ``python -m qnnpy --help``.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import textwrap
import traceback
import warnings
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import torch

from qnnpy.compare import ComparisonReport, compare, compare_tvm
from qnnpy.convert.converter import from_torch
from qnnpy.errors import ConversionError, UnsupportedOpsError
from qnnpy.model_files import InputFileError, load_model_file
from qnnpy.module import QDQModule
from qnnpy.profiles import PROFILE_FOR_ENGINE, PROFILES
from qnnpy.testing import engine_copy

EXIT_OK = 0
EXIT_CONVERSION = 1
EXIT_USAGE = 2
EXIT_MISMATCH = 3
EXIT_INPUT_FILE = 4

EXIT_CODES_HELP = f"""\
exit codes:
  {EXIT_OK}  success (compare: the runtime matched PyTorch bit for bit)
  {EXIT_CONVERSION}  conversion error: float model, unsupported ops (listed), unsupported file format,
     or another failure while converting or running
  {EXIT_USAGE}  usage error: unknown option, bad --input-shape, ...
  {EXIT_MISMATCH}  compare: the integer runtime differs from PyTorch (see compare --help)
  {EXIT_INPUT_FILE}  input file problem: missing, unreadable, invalid, or not holding a model / saved module / array,
     or a pickled model given without --trust-pickle
Errors are printed to stderr as one line; add --debug for the traceback."""

MODEL_FILE_HELP = (
    "quantized PyTorch model: TorchScript (torch.jit.save) or a whole module saved with torch.save(model, path) "
    "(read only with --trust-pickle, see there; the model's classes must be importable), or a torch.export "
    "archive (.pt2, torch.export.save) of a PT2E-quantized model (torchao's convert_pt2e). The kind is read from "
    "the file's contents."
)
TRUST_PICKLE_HELP = (
    "read a model saved with torch.save(model, path) by fully unpickling it (torch.load with weights_only=False). "
    "Unpickling runs whatever code the file names (a pickle can call any Python function), so give this flag only "
    "for files you trust. Without it such files are refused (exit "
    f"{EXIT_INPUT_FILE}); TorchScript and .pt2 files never need it"
)
SEED = 0


class CliError(Exception):
    """An error the command reports as one line and turns into an exit code."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def progress(message: str) -> None:
    """A progress line on stderr (stdout carries the results)."""
    print(f"[qnnpy] {message}", file=sys.stderr, flush=True)


def parse_shape(text: str) -> tuple[int, ...]:
    """``"1,3,224,224"`` -> ``(1, 3, 224, 224)``; every dimension a positive integer."""
    try:
        shape = tuple(int(part) for part in text.replace(" ", "").split(","))
    except ValueError:
        shape = ()
    if not shape or any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError(f"{text!r} is not a shape: give positive integers separated by commas, e.g. 1,3,224,224")
    return shape


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def generated_inputs(shape: tuple[int, ...], count: int, seed: int) -> list[torch.Tensor]:
    """``count`` standard-normal tensors of ``shape`` from a generator seeded with ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator) for _ in range(count)]


def read_inputs(path: Path, shape: tuple[int, ...], dtype: str = "float32") -> list[torch.Tensor]:
    """Inputs from a ``.npy`` array shaped like one input or stacked as ``(N, *shape)``: float32, or for an
    index input (``dtype`` "int64" / "int32", an embedding's) the integer array as that dtype."""
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputFileError(f"cannot read inputs from {path}: {e}") from e
    if tuple(array.shape) == shape:
        array = array[None]
    if tuple(array.shape[1:]) != shape:
        raise InputFileError(f"{path} holds an array of shape {tuple(array.shape)}; the module's input is {shape} "
                             f"(give one input of that shape or N stacked as (N, {', '.join(map(str, shape))}))")
    if dtype != "float32" and array.dtype.kind not in "iu":
        raise InputFileError(f"{path} holds {array.dtype} values; the module's input takes {dtype} indices")
    return [torch.from_numpy(np.ascontiguousarray(a, dtype=np.dtype(dtype))) for a in array]


def load_saved_module(directory: Path) -> QDQModule:
    """The module saved in ``directory``; any failure to read or validate it is an input file problem."""
    try:
        return QDQModule.load(directory)
    except FileNotFoundError as e:
        raise InputFileError(str(e)) from e
    except Exception as e:  # the graph file's validation names the node; QDQModule.load names the file
        raise InputFileError(f"cannot read the module saved in {directory}: {type(e).__name__}: {e}") from e


def convert_model(model: torch.nn.Module, inputs: Sequence[torch.Tensor], dynamic_batch: bool = False) -> QDQModule:
    """``from_torch``; a failure while running the model on the example inputs is a conversion error."""
    try:
        return from_torch(model, tuple(inputs), dynamic_batch=dynamic_batch)
    except ConversionError:
        raise
    except Exception as e:  # the model's own forward, e.g. on inputs of the wrong shape
        raise ConversionError(f"running the model on the example inputs failed: {type(e).__name__}: {e}") from e


def check_output(path: Path, directory: bool) -> None:
    """Refuses, before any work, an output path the command could not write at the end: a folder
    (``directory``) where a file is, a file where a folder is, or a place without write access."""
    if path.exists():
        if path.is_dir() != directory:
            raise CliError(EXIT_USAGE, f"-o {path}: exists and is {'a file' if directory else 'a folder'}, "
                                       f"not {'a folder' if directory else 'a file'}")
        target = path  # written again
    else:
        target = next(p for p in path.parents if p.exists())  # where it would be created
        if not target.is_dir():
            raise CliError(EXIT_USAGE, f"-o {path}: {target} is a file, not a folder")
    if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
        raise CliError(EXIT_USAGE, f"-o {path}: this process may not write to {target}")


# --- subcommands -----------------------------------------------------------------

def run_convert(args: argparse.Namespace) -> int:
    """qnnpy convert MODEL_FILE -o OUT_DIR --input-shape ..."""
    check_output(args.output, directory=True)
    progress(f"loading {args.model_file}")
    torch.backends.quantized.engine = "fbgemm"  # packs the weights the way from_torch reads them
    loaded = load_model_file(args.model_file, trust_pickle=args.trust_pickle)
    progress(f"  {loaded.kind} {type(loaded.model).__name__}; converting with example inputs "
             + ", ".join(str(s) for s in args.input_shape))
    inputs = [generated_inputs(shape, 1, SEED + i)[0] for i, shape in enumerate(args.input_shape)]
    module = convert_model(loaded.model, inputs, dynamic_batch=args.dynamic_batch)
    progress(f"  {len(module.nodes())} ops; saving to {args.output}")
    out = module.save(args.output)
    progress(f"  wrote {out / 'module.py'}, {out / 'params.npz'}, {out / 'graph.qnnpy'}")
    return EXIT_OK


def run_inspect(args: argparse.Namespace) -> int:
    """qnnpy inspect OUT_DIR"""
    print(load_saved_module(args.module_dir).summary())
    return EXIT_OK


def _linked_module(model: torch.nn.Module, saved: QDQModule, example: torch.Tensor) -> QDQModule:
    """The saved module, linked to ``model``'s tensors by converting ``model`` again; the two must be the same graph."""
    fresh = convert_model(model, [example])
    if fresh.graph.serialize() != saved.graph.serialize():
        raise CliError(EXIT_MISMATCH, "the saved module is not the conversion of this model (converting it again "
                                      "gives a different graph): convert the model again")
    return QDQModule(saved.graph, fresh.torch_nodes)


def _profiles(choice: str) -> list[str]:
    return list(PROFILES) if choice == "all" else [choice]


def _counting_profiles(choice: str, engine: str) -> list[str]:
    """The profiles whose mismatches set exit code 3."""
    return [PROFILE_FOR_ENGINE[engine]] if choice == "all" else [choice]


def _use_tvm(flag: bool | None) -> bool:
    try:
        import tvm  # noqa: F401
    except ImportError:
        if flag:
            raise CliError(EXIT_CONVERSION, "--tvm given but Apache TVM is not installed: pip install 'qnnpy[tvm]'")
        return False
    return flag is not False


def _report_lines(report: ComparisonReport, engine: str) -> list[str]:
    lines = [report.table(), ""]
    for profile in report.layers:
        exact = sum(r.identical == r.total for r in report.layers[profile])
        first = report.first_divergence(profile)
        where = "" if first is None else f"; first divergence at '{first.source}' ({first.op})"
        lines.append(f"runtime profile {profile} vs PyTorch {engine}: {exact}/{len(report.layers[profile])} "
                     f"layers bit-identical{where}")
    return lines


def run_compare(args: argparse.Namespace) -> int:
    """qnnpy compare MODEL_FILE OUT_DIR [...]"""
    saved = load_saved_module(args.module_dir)
    if len(saved.input_shapes) != 1:
        raise CliError(EXIT_CONVERSION, f"compare supports single-input modules; this one has {len(saved.input_shapes)}")
    shape, dtype = tuple(saved.input_shapes[0]), saved.input_dtypes[0]
    if dtype != "float32" and not args.inputs:
        raise CliError(EXIT_CONVERSION, f"the module's input takes {dtype} indices: give them with --inputs FILE.npy")
    inputs = read_inputs(args.inputs, shape, dtype) if args.inputs else generated_inputs(shape, args.num_inputs, SEED)
    use_tvm = _use_tvm(args.tvm)
    progress(f"loading {args.model_file}")
    torch.backends.quantized.engine = "fbgemm"  # the engine from_torch reads the packed weights under
    model = load_model_file(args.model_file, trust_pickle=args.trust_pickle).model
    module = _linked_module(model, saved, inputs[0])
    progress(f"running PyTorch ({args.engine} engine) and the integer runtime on {len(inputs)} input(s) of shape {shape}")
    with engine_copy(model, args.engine) as engine_model:
        report = compare(engine_model, module, inputs, profiles=_profiles(args.profile))
        lines = _report_lines(report, args.engine)
        if use_tvm:
            progress("compiling with TVM (llvm) and running")
            lines.append(compare_tvm(engine_model, module, inputs).summary())
    print("\n".join(lines))
    mismatched = [p for p in _counting_profiles(args.profile, args.engine) if not report.all_identical(p)]
    if mismatched:
        first = report.first_divergence(mismatched[0])
        print(f"qnnpy: mismatch: runtime profile {mismatched[0]} differs from PyTorch {args.engine}; first "
              f"diverging layer '{first.source}'", file=sys.stderr)
        return EXIT_MISMATCH
    return EXIT_OK


def run_build(args: argparse.Namespace) -> int:
    """qnnpy build MODEL_DIR_OR_FILE -o LIB.so [--form] [--profile] [--target]"""
    from qnnpy import tvm_bridge

    check_output(args.output, directory=False)
    if args.model.is_dir():
        module = load_saved_module(args.model)
    else:
        if not args.input_shape:
            raise CliError(EXIT_USAGE, "--input-shape is required when MODEL is a model file (not a saved module folder)")
        progress(f"loading {args.model}")
        torch.backends.quantized.engine = "fbgemm"
        loaded = load_model_file(args.model, trust_pickle=args.trust_pickle)
        inputs = [generated_inputs(shape, 1, SEED + i)[0] for i, shape in enumerate(args.input_shape)]
        module = convert_model(loaded.model, inputs)
    progress(f"compiling {len(module.nodes())} ops in the {args.form} form, profile {args.profile}, target {args.target}")
    try:
        runner = tvm_bridge.build(module, form=args.form, profile=args.profile, target=args.target, bind_params=True)
    except FileNotFoundError as e:  # the kernel library was not built
        raise CliError(EXIT_CONVERSION, str(e)) from e
    path = runner.export_library(args.output)
    progress(f"wrote {path}: load it with tvm.runtime.load_module and relax.VirtualMachine (docs/deploy.md)")
    return EXIT_OK


def add_build_command(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``build`` subcommand: a deployable TVM shared library of a module."""
    build = commands.add_parser(
        "build", parents=[common], formatter_class=_formatter, epilog=EXIT_CODES_HELP,
        help="compile a module with TVM into a deployable shared library",
        description=_paragraphs(
            "Compile the module saved in MODEL (a folder written by qnnpy convert) or converted from MODEL (a "
            "model file, with --input-shape) with TVM and write a shared library with the params bound. A fresh "
            "process runs it with TVM and qnnpy's kernel library only: "
            "relax.VirtualMachine(tvm.runtime.load_module(LIB), tvm.cpu()) (see docs/deploy.md).",
            "Form kernels: every node calls qnnpy's integer kernels (bit-exact with the runtime under the same "
            "profile). The library links qnnpy's kernel library by absolute path: keep qnnpy installed where it "
            "is, or copy both libraries and set LD_LIBRARY_PATH. Form integer: pure integer Relax, also "
            "bit-exact with the runtime, for any TVM target, no qnnpy library needed at run time (slower: TVM "
            "has no tuned CPU schedules). Form qdq: the float QDQ module as written."),
    )
    build.add_argument("model", metavar="MODEL_DIR_OR_FILE", type=Path,
                       help="folder written by qnnpy convert, or a model file (" + MODEL_FILE_HELP + ")")
    build.add_argument("--trust-pickle", action="store_true", help=TRUST_PICKLE_HELP)
    build.add_argument("-o", "--output", metavar="LIB.so", type=Path, required=True, help="shared library to write")
    build.add_argument("--input-shape", metavar="SHAPE", type=parse_shape, action="append",
                       help="with a model file: shape of one float input, e.g. 1,3,224,224; once per input")
    build.add_argument("--form", choices=["kernels", "integer", "qdq"], default="kernels",
                       help="how TVM computes: kernels = qnnpy's integer kernels, integer = pure integer Relax "
                            "(any target), qdq = the float QDQ form (default: %(default)s)")
    build.add_argument("--profile", choices=PROFILES, default="int32_bias",
                       help="arithmetic profile of the runtime: " + ", ".join(PROFILES) + " (default: %(default)s)")
    build.add_argument("--target", default="llvm", help="TVM target (default: %(default)s)")
    build.set_defaults(run=run_build)


# --- parser and entry point ------------------------------------------------------

def _paragraphs(*texts: str) -> str:
    """Descriptions wrapped to 100 columns (the formatter keeps the paragraph breaks and the exit code list)."""
    return "\n\n".join(textwrap.fill(t, 100) for t in texts)


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="on error, print the full traceback and keep warnings")

    parser = argparse.ArgumentParser(
        prog="qnnpy",
        description=_paragraphs("Convert quantized PyTorch models to full-integer canonical QDQ modules for Apache "
                                "TVM Relax, inspect them, and compare qnnpy's integer runtime and TVM with PyTorch."),
        epilog=EXIT_CODES_HELP, formatter_class=_formatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    convert = commands.add_parser(
        "convert", parents=[common], formatter_class=_formatter, epilog=EXIT_CODES_HELP,
        help="convert a saved quantized model to a QDQ module folder",
        description=_paragraphs("Load MODEL_FILE, convert it with qnnpy.from_torch on generated example inputs "
                                "(standard normal, fixed seed), and write module.py (Relax TVMScript), params.npz "
                                "and graph.qnnpy to OUT_DIR. Progress goes to stderr."),
    )
    convert.add_argument("model_file", metavar="MODEL_FILE", type=Path, help=MODEL_FILE_HELP)
    convert.add_argument("--trust-pickle", action="store_true", help=TRUST_PICKLE_HELP)
    convert.add_argument("-o", "--output", metavar="OUT_DIR", type=Path, required=True,
                         help="folder to write the module to (created if missing)")
    convert.add_argument("--input-shape", metavar="SHAPE", type=parse_shape, action="append", required=True,
                         help="shape of one float input of forward(), e.g. 1,3,224,224; repeat once per input, in "
                              "order. The shapes are static in the module (batch size included, unless "
                              "--dynamic-batch)")
    convert.add_argument("--dynamic-batch", action="store_true",
                         help="make dim 0 of the inputs a batch of any size (a symbolic dim in module.py); "
                              "refused for a model that reshapes or reduces across the batch")
    convert.set_defaults(run=run_convert)

    inspect = commands.add_parser(
        "inspect", parents=[common], formatter_class=_formatter, epilog=EXIT_CODES_HELP,
        help="print the summary of a converted module",
        description=_paragraphs("Print the summary of the module saved in OUT_DIR: ops by count, param bytes by "
                                "dtype against the float model, int32 bias saturations."),
    )
    inspect.add_argument("module_dir", metavar="OUT_DIR", type=Path, help="folder written by qnnpy convert")
    inspect.set_defaults(run=run_inspect)

    comp = commands.add_parser(
        "compare", parents=[common], formatter_class=_formatter, epilog=EXIT_CODES_HELP,
        help="compare the integer runtime (and TVM) with PyTorch, layer by layer",
        description=_paragraphs(
            "Run MODEL_FILE in PyTorch and the module in OUT_DIR in qnnpy's integer runtime on the same inputs "
            "and print, per layer and profile, the fraction of values bit-identical and the largest difference "
            "in quantization steps (LSB); with TVM, also TVM's final output against PyTorch. OUT_DIR must be the "
            "conversion of MODEL_FILE (it is checked).",
            f"Exit code {EXIT_MISMATCH} when a runtime profile differs from PyTorch at some layer. With --profile "
            "all, only the profile paired with --engine counts (fbgemm <-> fbgemm, qnnpack <-> int32_bias); the "
            "other is shown for information. TVM computes in float32 and never sets the exit code.",
        ),
    )
    comp.add_argument("model_file", metavar="MODEL_FILE", type=Path, help=MODEL_FILE_HELP)
    comp.add_argument("module_dir", metavar="OUT_DIR", type=Path, help="folder written by qnnpy convert")
    comp.add_argument("--trust-pickle", action="store_true", help=TRUST_PICKLE_HELP)
    comp.add_argument("--inputs", metavar="FILE.npy", type=Path,
                      help="float inputs (integer indices for an embedding model): one array shaped like the "
                           "module's input, or N of them stacked as (N, *input shape). Default: generated "
                           "(float inputs only), see --num-inputs")
    comp.add_argument("--num-inputs", metavar="N", type=positive_int, default=4,
                      help="number of generated standard-normal inputs (fixed seed) when --inputs is not given "
                           "(default: %(default)s)")
    comp.add_argument("--profile", choices=[*PROFILES, "all"], default="all",
                      help="runtime profile(s) to compare: qnnpack (= PyTorch qnnpack), fbgemm (= PyTorch "
                           "fbgemm), int32_bias, fixed_point or all; with all, only the profile equal to --engine "
                           "sets exit code 3 (default: %(default)s)")
    comp.add_argument("--engine", choices=sorted(PROFILE_FOR_ENGINE), default="fbgemm",
                      help="PyTorch quantized engine to run the model under; the weights are re-packed for it "
                           "(default: %(default)s)")
    comp.add_argument("--tvm", action=argparse.BooleanOptionalAction, default=None,
                      help="also compile and run the module with TVM (default: when TVM is importable)")
    comp.set_defaults(run=run_compare)
    add_build_command(commands, common)
    return parser


def _one_line(error: BaseException) -> str:
    if isinstance(error, UnsupportedOpsError):
        ops = "; ".join(f"{path}: {name}" for path, name in error.ops)
        return f"{len(error.ops)} unsupported op(s), none converted: {ops}"
    text = " ".join(str(error).split())
    if isinstance(error, (CliError, InputFileError, ConversionError)):
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _exit_code(error: BaseException) -> int:
    if isinstance(error, CliError):
        return error.code
    if isinstance(error, InputFileError):
        return EXIT_INPUT_FILE
    return EXIT_CONVERSION  # ConversionError, failures while running a model


@contextlib.contextmanager
def _quiet_torch(debug: bool) -> Iterator[None]:
    """Hide PyTorch's deprecation notices (unless --debug) and restore the quantized engine afterwards."""
    engine = torch.backends.quantized.engine
    with warnings.catch_warnings():
        if not debug:
            warnings.simplefilter("ignore")
        try:
            yield
        finally:
            torch.backends.quantized.engine = engine


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help (0) and usage errors (2)
        return int(e.code or 0)
    run: Callable[[argparse.Namespace], int] = args.run
    with _quiet_torch(args.debug):
        try:
            return run(args)
        except Exception as e:
            if args.debug:
                traceback.print_exc()
            print(f"qnnpy: error: {_one_line(e)}", file=sys.stderr)
            return _exit_code(e)
