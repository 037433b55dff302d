"""The ``qnnpy`` command: convert a saved quantized PyTorch model, inspect the result, compare it with
PyTorch, build a TVM library.

Run ``qnnpy --help`` or ``python -m qnnpy --help``. PyTorch and TVM are imported by the commands
that use them, not before the arguments are read, so ``--help`` and ``--version`` answer at once.
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
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import qnnpy
from qnnpy.cli_inputs import generated_inputs, parse_shape, positive_int, read_inputs
from qnnpy.cross_targets import CROSS_TARGETS
from qnnpy.errors import ConversionError, InputFileError, UnsupportedOpsError
from qnnpy.native_logs import without_native_noise
from qnnpy.profiles import ENGINES, PROFILES, SHOWN_PROFILES, profile_for_engine

if TYPE_CHECKING:
    import torch

    from qnnpy.comparison import ComparisonReport
    from qnnpy.module import QDQModule

EXIT_OK = 0
EXIT_CONVERSION = 1
EXIT_USAGE = 2
EXIT_MISMATCH = 3
EXIT_INPUT_FILE = 4

ERRORS_NOTE = "Errors are printed to stderr as one line; add --debug for the traceback."
EXIT_CODES_SUMMARY = f"""\
exit codes: {EXIT_OK} success, {EXIT_CONVERSION} conversion error, {EXIT_USAGE} usage error, {EXIT_MISMATCH} mismatch \
(compare), {EXIT_INPUT_FILE} input file problem;
each command's --help says when. {ERRORS_NOTE}"""
INPUT_FILE_PROBLEM = ("a file is missing, unreadable or invalid, or a pickled model was given without "
                      "--trust-pickle")

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


def exit_codes(*codes: tuple[int, str]) -> str:
    """The epilog of one command: its exit codes and their meaning there."""
    lines = ["exit codes:"] + [textwrap.fill(meaning, 100, initial_indent=f"  {code}  ", subsequent_indent="     ")
                               for code, meaning in codes]
    return "\n".join(lines + [ERRORS_NOTE])


def check_output(path: Path, directory: bool) -> None:
    """Refuses, before any work, an output path the command could not write at the end: a folder
    (``directory``) where a file is, a file where a folder is, or a place without write access
    (a ``CliError`` with the usage exit code)."""
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


def load_saved_module(directory: Path) -> "QDQModule":
    """The module saved in ``directory``; any failure to read or validate it is an input file problem."""
    from qnnpy.module import QDQModule

    try:
        return QDQModule.load(directory)
    except FileNotFoundError as e:
        raise InputFileError(str(e)) from e
    except Exception as e:  # the graph file's validation names the node; QDQModule.load names the file
        raise InputFileError(f"cannot read the module saved in {directory}: {type(e).__name__}: {e}") from e


def load_model(path: Path, trust_pickle: bool) -> "torch.nn.Module":
    """The model in ``path``, its weights packed for fbgemm (the way from_torch reads them)."""
    import torch

    from qnnpy.model_files import load_model_file

    progress(f"loading {path}")
    torch.backends.quantized.engine = "fbgemm"
    loaded = load_model_file(path, trust_pickle=trust_pickle)
    progress(f"  {loaded.kind} {type(loaded.model).__name__}")
    return loaded.model


def convert_model(model: "torch.nn.Module", shapes: Sequence[tuple[int, ...]], dynamic_batch: bool = False) -> "QDQModule":
    """``from_torch`` on generated inputs of ``shapes``. Shapes the model does not run on are a usage error
    that names the shape the model expects; a failure of the conversion itself is a conversion error."""
    from qnnpy.convert.converter import from_torch
    from qnnpy.convert.input_shapes import check_model_runs

    inputs = [generated_inputs(shape, 1, SEED + i)[0] for i, shape in enumerate(shapes)]
    given = " and ".join(",".join(map(str, s)) for s in shapes)
    try:
        check_model_runs(model, inputs, f"--input-shape {given}")
    except ValueError as e:
        raise CliError(EXIT_USAGE, str(e)) from e
    progress(f"converting with example inputs of shape {given}")
    try:
        return from_torch(model, tuple(inputs), dynamic_batch=dynamic_batch)
    except ConversionError:
        raise
    except Exception as e:  # a failure inside the conversion, after the model ran on these inputs
        raise ConversionError(f"converting the model failed: {type(e).__name__}: {e}") from e


# --- subcommands -----------------------------------------------------------------

def run_convert(args: argparse.Namespace) -> int:
    """qnnpy convert MODEL_FILE -o OUT_DIR --input-shape ..."""
    check_output(args.output, directory=True)
    model = load_model(args.model_file, args.trust_pickle)
    module = convert_model(model, args.input_shape, dynamic_batch=args.dynamic_batch)
    progress(f"  {len(module.nodes())} ops; saving to {args.output}")
    out = module.save(args.output)
    progress(f"  wrote {out / 'graph.qnnpy'} (the module and its params) and {out / 'module.py'} (TVMScript)")
    return EXIT_OK


def run_inspect(args: argparse.Namespace) -> int:
    """qnnpy inspect OUT_DIR"""
    print(load_saved_module(args.module_dir).summary())
    return EXIT_OK


def _report_lines(report: "ComparisonReport", required: str | None) -> list[str]:
    lines = [report.table(), ""]
    for profile in report.layers:
        exact = sum(r.identical == r.total for r in report.layers[profile])
        first = report.first_divergence(profile)
        where = "" if first is None else f"; first divergence at '{first.source}' ({first.op})"
        role = " (required)" if profile == required else ""
        lines.append(f"runtime profile {profile}{role} vs PyTorch {report.engine}: {exact}/{len(report.layers[profile])} "
                     f"layers bit-identical{where}")
    return lines


def _use_tvm(flag: bool | None) -> bool:
    try:
        import tvm  # noqa: F401
    except ImportError:
        if flag:
            raise CliError(EXIT_CONVERSION, "--tvm given but Apache TVM is not installed: pip install 'qnnpy[tvm]'")
        return False
    return flag is not False


def run_compare(args: argparse.Namespace) -> int:
    """qnnpy compare MODEL_FILE OUT_DIR [...]"""
    from qnnpy.comparison import PT2E_REFERENCE, compare, compare_tvm, linked_module, reference_name
    from qnnpy.profiles import current_engine
    from qnnpy.testing import engine_copy

    engine = args.engine or current_engine()
    if profile_for_engine(engine) is None:
        raise CliError(EXIT_USAGE, f"PyTorch's engine here is {engine!r}, which no profile reproduces: pass --engine")
    saved = load_saved_module(args.module_dir)
    if len(saved.input_shapes) != 1:
        raise CliError(EXIT_CONVERSION, f"compare supports single-input modules; this one has {len(saved.input_shapes)}")
    shape, dtype = tuple(saved.input_shapes[0]), saved.input_dtypes[0]
    if dtype != "float32" and not args.inputs:
        raise CliError(EXIT_CONVERSION, f"the module's input takes {dtype} indices: give them with --inputs FILE.npy")
    inputs = read_inputs(args.inputs, shape, dtype) if args.inputs else generated_inputs(shape, args.num_inputs, SEED)
    use_tvm = _use_tvm(args.tvm)
    model = load_model(args.model_file, args.trust_pickle)
    # A PT2E model's reference is float arithmetic, which no engine's profile is; fbgemm's float bias is the closest.
    engine_profile = "fbgemm" if reference_name(model) == PT2E_REFERENCE else profile_for_engine(engine)
    required = engine_profile if args.require is None else args.require
    profiles = list(PROFILES if args.profile == "all" else SHOWN_PROFILES if args.profile is None else [args.profile])
    if required != "none" and required not in profiles:
        profiles.append(required)
    try:
        module = linked_module(model, saved, inputs[0])
    except ValueError as e:
        raise CliError(EXIT_MISMATCH, f"{args.module_dir}: {e}") from e
    ran = "PT2E reference ops" if reference_name(model) == PT2E_REFERENCE else f"{engine} engine"
    progress(f"running PyTorch ({ran}) and the integer runtime on {len(inputs)} input(s) of shape {shape}")
    with engine_copy(model, engine) as engine_model:
        report = compare(engine_model, module, inputs, profiles=profiles)
        lines = _report_lines(report, None if required == "none" else required)
        if use_tvm:
            progress("compiling with TVM (for this CPU) and running")
            lines.append(compare_tvm(engine_model, module, inputs).summary())
    print("\n".join(lines))
    if required != "none" and not report.all_identical(required):
        first = report.first_divergence(required)
        print(f"qnnpy: mismatch: runtime profile {required} differs from PyTorch {report.engine}; first diverging layer "
              f"'{first.source}'", file=sys.stderr)
        return EXIT_MISMATCH
    return EXIT_OK


def run_build(args: argparse.Namespace) -> int:
    """qnnpy build MODEL_DIR_OR_FILE -o LIB.so|FOLDER [--form] [--profile] [--target] [--no-dotprod] [--kernel-library]"""
    from qnnpy.profiles import default_profile

    cross = args.target in CROSS_TARGETS
    if not cross and (args.kernel_library or args.no_dotprod):
        raise CliError(EXIT_USAGE, f"--kernel-library and --no-dotprod are options of the cross targets "
                                   f"({', '.join(CROSS_TARGETS)}), not of --target {args.target}")
    args.form = args.form or ("integer" if cross else "kernels")
    check_output(args.output, directory=cross)
    if not args.model.exists():
        raise CliError(EXIT_INPUT_FILE, f"{args.model}: no such file or directory")
    if args.model.is_dir():
        module = load_saved_module(args.model)
    else:
        if not args.input_shape:
            raise CliError(EXIT_USAGE, "--input-shape is required when MODEL is a model file (not a saved module folder)")
        module = convert_model(load_model(args.model, args.trust_pickle), args.input_shape)
    from qnnpy import tvm_bridge

    if module.dynamic_batch and args.form != "qdq":
        raise CliError(EXIT_USAGE, f"{args.model} has a dynamic batch and --form {args.form} needs static shapes: "
                                   "give --form qdq (any batch size), or convert without --dynamic-batch")
    profile = args.profile or default_profile()
    if cross:
        return _write_bundle(module, args, profile)
    progress(f"compiling {len(module.nodes())} ops in the {args.form} form, profile {profile}, target {args.target}")
    try:
        runner = tvm_bridge.build(module, form=args.form, profile=profile, target=args.target, bind_params=True)
    except FileNotFoundError as e:  # the kernel library was not built
        raise CliError(EXIT_CONVERSION, str(e)) from e
    path = runner.export_library(args.output)
    progress(f"wrote {path}: load it with tvm.runtime.load_module and relax.VirtualMachine (docs/deploy.md)")
    return EXIT_OK


def _write_bundle(module: "QDQModule", args: argparse.Namespace, profile: str) -> int:
    """The deploy folder of ``qnnpy build --target aarch64-linux-gnu``."""
    from qnnpy.tvm_bridge.deploy import write_bundle

    try:
        folder = write_bundle(module, args.output, args.target, args.form, profile, dotprod=not args.no_dotprod,
                              kernel_library=args.kernel_library, progress=progress)
    except (FileNotFoundError, ValueError) as e:  # the kernels form without a kernel library for the target
        raise CliError(EXIT_USAGE, str(e)) from e
    except RuntimeError as e:  # no cross compiler, TVM's runtime for the target not fetched, a failed link
        raise CliError(EXIT_CONVERSION, str(e)) from e
    progress(f"wrote {folder}: copy it to the board and run ./run model.so input.npy output.npy ({folder / 'README.txt'})")
    return EXIT_OK


def run_generate(args: argparse.Namespace) -> int:
    """qnnpy generate MODEL_DIR --prompt-ids IDS | --prompt TEXT [...]"""
    from qnnpy.cli_generate import run_generate as generate

    differ, lines = generate(args, progress)
    print("\n".join(lines))
    return EXIT_MISMATCH if differ > 0 else EXIT_OK


# --- parser and entry point ------------------------------------------------------

def _paragraphs(*texts: str) -> str:
    """Descriptions wrapped to 100 columns (the formatter keeps the paragraph breaks and the exit code list)."""
    return "\n\n".join(textwrap.fill(t, 100) for t in texts)


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def add_convert_command(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``convert`` subcommand: a model file to a saved module folder."""
    convert = commands.add_parser(
        "convert", parents=[common], formatter_class=_formatter,
        help="convert a saved quantized model to a QDQ module folder",
        description=_paragraphs("Load MODEL_FILE, convert it with qnnpy.from_torch on generated example inputs "
                                "(standard normal, fixed seed), and write graph.qnnpy (the module with its params, "
                                "what qnnpy.load reads) and module.py (Relax TVMScript) to OUT_DIR. Progress goes "
                                "to stderr."),
        epilog=exit_codes(
            (EXIT_OK, "the module was written"),
            (EXIT_CONVERSION, "conversion error: a float model, unsupported ops (listed), an unsupported file format"),
            (EXIT_USAGE, "usage error: an unknown option, a bad -o, or an --input-shape the model does not run on "
                         "(the expected shape is named)"),
            (EXIT_INPUT_FILE, INPUT_FILE_PROBLEM)),
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


def add_inspect_command(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``inspect`` subcommand: a saved module's summary."""
    inspect = commands.add_parser(
        "inspect", parents=[common], formatter_class=_formatter,
        help="print the summary of a converted module",
        description=_paragraphs("Print the summary of the module saved in OUT_DIR: ops by count, param bytes by "
                                "dtype against the float model, int32 bias saturations."),
        epilog=exit_codes((EXIT_OK, "the summary was printed"), (EXIT_USAGE, "usage error"),
                          (EXIT_INPUT_FILE, "OUT_DIR holds no readable, valid saved module")),
    )
    inspect.add_argument("module_dir", metavar="OUT_DIR", type=Path, help="folder written by qnnpy convert")
    inspect.set_defaults(run=run_inspect)


def add_compare_command(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``compare`` subcommand: the runtime (and TVM) against PyTorch, layer by layer."""
    comp = commands.add_parser(
        "compare", parents=[common], formatter_class=_formatter,
        help="compare the integer runtime (and TVM) with PyTorch, layer by layer",
        description=_paragraphs(
            "Run MODEL_FILE in PyTorch and the module in OUT_DIR in qnnpy's integer runtime on the same inputs "
            "and print, per layer and profile, the percentage of values bit-identical and the largest difference "
            "in quantization steps; with TVM, also TVM's final output against PyTorch. OUT_DIR must be the "
            "conversion of MODEL_FILE (it is checked).",
            "PyTorch runs under --engine, by default the engine it uses on this machine. The profile that "
            "reproduces that engine on this CPU (fbgemm, qnnpack; x86 / x86_amx and onednn / onednn_amx on "
            "CPUs with AVX-512 VNNI / AMX; fbgemm for a PT2E model, whose reference is float) must be "
            "bit-identical at every layer, or the exit code is 3; --require names another profile, or none. "
            "The other profiles are shown for information; TVM never sets the exit code.",
        ),
        epilog=exit_codes(
            (EXIT_OK, "the required profile is bit-identical to PyTorch at every layer"),
            (EXIT_CONVERSION, "the model could not be converted or run"),
            (EXIT_USAGE, "usage error"),
            (EXIT_MISMATCH, "mismatch: the required profile differs from PyTorch at some layer (the first is "
                            "named), or OUT_DIR is not the conversion of MODEL_FILE"),
            (EXIT_INPUT_FILE, INPUT_FILE_PROBLEM)),
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
    comp.add_argument("--profile", choices=[*PROFILES, "all"],
                      help="runtime profile to show: " + ", ".join(PROFILES) + ", or all (default: "
                           + ", ".join(SHOWN_PROFILES) + " and the one that reproduces --engine)")
    comp.add_argument("--engine", choices=sorted(ENGINES),
                      help="PyTorch quantized engine to run the model under; the weights are re-packed for it "
                           "(default: torch.backends.quantized.engine, the engine PyTorch uses here)")
    comp.add_argument("--require", choices=[*PROFILES, "none"],
                      help="the profile that must be bit-identical to PyTorch for exit code 0 (default: the "
                           "profile that reproduces --engine); none: never exit 3")
    comp.add_argument("--tvm", action=argparse.BooleanOptionalAction, default=None,
                      help="also compile and run the module with TVM (default: when TVM is importable)")
    comp.set_defaults(run=run_compare)


def add_build_command(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``build`` subcommand: a deployable TVM shared library of a module."""
    build = commands.add_parser(
        "build", parents=[common], formatter_class=_formatter,
        help="compile a module with TVM into a deployable shared library",
        description=_paragraphs(
            "Compile the module saved in MODEL (a folder written by qnnpy convert) or converted from MODEL (a "
            "model file, with --input-shape) with TVM and write a shared library with the params bound. A fresh "
            "process runs it with TVM and qnnpy's kernel library only: "
            "relax.VirtualMachine(tvm.runtime.load_module(LIB), tvm.cpu()) (see docs/deploy.md).",
            "Form kernels: every node calls qnnpy's integer kernels (bit-exact with the runtime under the same "
            "profile). The library links qnnpy's kernel library by absolute path: keep qnnpy installed where it "
            "is, or copy both libraries and set LD_LIBRARY_PATH. Form integer: pure integer Relax, also "
            "bit-exact with the runtime, for any TVM target, no qnnpy library needed at run time: TVM's own code, "
            "with qnnpy's schedule rules (its int8 convs and linears tensorized with VNNI on x86 targets that have it, "
            "with sdot on AArch64 with dotprod; see docs/tvm.md). Form qdq: the float QDQ module as written.",
            "--target aarch64-linux-gnu writes a deploy folder for an AArch64 board instead (-o names the folder): "
            "the module compiled for it, TVM's runtime for it (from the apache-tvm AArch64 wheels, fetched once), "
            "a runner (./run model.so input.npy output.npy) and, in the kernels form, qnnpy's kernel library built "
            "for it (--kernel-library; scripts/cross_build_tvm_kernels.sh builds it). Needs the cross compiler "
            "g++-aarch64-linux-gnu. Default form there: integer (see docs/deploy.md)."),
        epilog=exit_codes(
            (EXIT_OK, "the library was written"),
            (EXIT_CONVERSION, "conversion or compile error, --form kernels without qnnpy's kernel library, or "
                              "(cross targets) no cross compiler or TVM runtime wheel"),
            (EXIT_USAGE, "usage error: an unknown option, a bad -o, a model file without --input-shape or "
                         "with one the model does not run on, a cross kernels form without a kernel library "
                         "for the target"),
            (EXIT_INPUT_FILE, INPUT_FILE_PROBLEM)),
    )
    build.add_argument("model", metavar="MODEL_DIR_OR_FILE", type=Path,
                       help="folder written by qnnpy convert, or a model file (" + MODEL_FILE_HELP + ")")
    build.add_argument("--trust-pickle", action="store_true", help=TRUST_PICKLE_HELP)
    build.add_argument("-o", "--output", metavar="LIB.so", type=Path, required=True,
                       help="shared library to write (a folder for a cross target)")
    build.add_argument("--input-shape", metavar="SHAPE", type=parse_shape, action="append",
                       help="with a model file: shape of one float input, e.g. 1,3,224,224; once per input")
    build.add_argument("--form", choices=["kernels", "integer", "qdq"],
                       help="how TVM computes: kernels = qnnpy's integer kernels, integer = pure integer Relax "
                            "(any target), qdq = the float QDQ form (default: kernels; integer for a cross target)")
    build.add_argument("--profile", choices=PROFILES,
                       help="arithmetic profile: " + ", ".join(PROFILES) + " (default: the profile that "
                            "reproduces the engine PyTorch uses here on this CPU)")
    build.add_argument("--target", default="host",
                       help="TVM target: host (LLVM for this CPU), llvm (a generic x86-64), a target string such "
                            "as 'llvm -mcpu=znver4', or a cross target for a deploy folder: "
                            + ", ".join(CROSS_TARGETS) + " (default: %(default)s)")
    build.add_argument("--no-dotprod", action="store_true",
                       help="cross target: compile for Armv8.0 cores without the dot-product instructions "
                            "(Cortex-A53/A72, Raspberry Pi 3/4); default: Armv8.2 dotprod (Cortex-A55/A76 and newer)")
    build.add_argument("--kernel-library", metavar="SO", type=Path,
                       help="cross target, kernels form: qnnpy's kernel library built for the target "
                            "(scripts/cross_build_tvm_kernels.sh prints its path)")
    build.set_defaults(run=run_build)


def add_generate_command(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``generate`` subcommand: greedy decoding of a Hugging Face decoder LM."""
    from qnnpy.cli_generate import token_ids
    from qnnpy.llm_recipes import RECIPES

    generate = commands.add_parser(
        "generate", parents=[common], formatter_class=_formatter,
        help="decode greedily with a torchao-quantized Hugging Face decoder LM",
        description=_paragraphs(
            "Load the causal LM saved in MODEL_DIR (save_pretrained: a float model, or one quantized with "
            "transformers' TorchAoConfig), quantize it with a torchao recipe unless it is quantized already, convert "
            "one decode step with its static KV cache as explicit state (qnnpy.llm.convert_decoder) and decode "
            "greedily in qnnpy's runtime or TVM's kernels form. Prints the new token ids (and their text where the "
            "folder has a tokenizer) and the time per token on stdout; progress on stderr.",
            "--check also decodes with PyTorch (transformers' static-cache module, the computation converted) and "
            "says where the tokens differ and how near a tie PyTorch's two best logits were there."),
        epilog=exit_codes(
            (EXIT_OK, "the tokens were printed (with --check: equal to PyTorch's)"),
            (EXIT_CONVERSION, "a float model without --quantize, or the model could not be converted or run"),
            (EXIT_USAGE, "usage error"),
            (EXIT_MISMATCH, "--check: the tokens differ from PyTorch's"),
            (EXIT_INPUT_FILE, "MODEL_DIR holds no loadable causal LM, --prompt without a tokenizer, or a prompt "
                              "token outside the vocabulary")),
    )
    generate.add_argument("model_dir", metavar="MODEL_DIR", type=Path,
                          help="folder written by save_pretrained (LlamaForCausalLM, Qwen2ForCausalLM, ...)")
    prompt = generate.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", metavar="TEXT", help="prompt text, tokenized by the folder's tokenizer")
    prompt.add_argument("--prompt-ids", metavar="IDS", type=token_ids, help="prompt token ids, e.g. 1,15043,29892")
    generate.add_argument("--quantize", choices=["saved", *RECIPES], default="saved",
                          help="saved: the model as saved (it must hold torchao weights); or a torchao recipe for a "
                               "float model: " + ", ".join(RECIPES) + " (default: %(default)s)")
    generate.add_argument("--max-new-tokens", metavar="N", type=positive_int, default=32,
                          help="tokens to generate (default: %(default)s)")
    generate.add_argument("--max-cache-len", metavar="N", type=positive_int,
                          help="positions of the KV cache (default: the prompt and the new tokens)")
    generate.add_argument("--prefill-chunk", metavar="C", type=positive_int, default=1,
                          help="also convert a prefill module that runs the prompt C tokens a call (default: "
                               "%(default)s, the prompt one token a step)")
    generate.add_argument("--threads", metavar="T", type=positive_int, default=1,
                          help="runtime threads (default: %(default)s)")
    generate.add_argument("--runner", choices=["runtime", "kernels"], default="runtime",
                          help="runtime = qnnpy's runtime, kernels = TVM's kernels form (default: %(default)s)")
    generate.add_argument("--check", action="store_true", help="also decode with PyTorch and compare the tokens")
    generate.set_defaults(run=run_generate)


def build_parser() -> argparse.ArgumentParser:
    """The ``qnnpy`` argument parser with its five commands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="on error, print the full traceback; show PyTorch's warnings and TVM's log lines")

    parser = argparse.ArgumentParser(
        prog="qnnpy",
        description=_paragraphs("Convert quantized PyTorch models to full-integer canonical QDQ modules for Apache "
                                "TVM Relax, inspect them, compare qnnpy's integer runtime and TVM with PyTorch, "
                                "and build deployable TVM libraries."),
        epilog=EXIT_CODES_SUMMARY, formatter_class=_formatter,
    )
    parser.add_argument("--version", action="version", version=f"qnnpy {qnnpy.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_convert_command(commands, common)
    add_inspect_command(commands, common)
    add_compare_command(commands, common)
    add_build_command(commands, common)
    add_generate_command(commands, common)
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
    """Hide Python's warnings, PyTorch's among them (unless --debug), and restore the quantized engine
    afterwards."""
    with warnings.catch_warnings():
        if not debug:
            warnings.simplefilter("ignore")
        engine = sys.modules["torch"].backends.quantized.engine if "torch" in sys.modules else None
        try:
            yield
        finally:
            if engine is not None:
                sys.modules["torch"].backends.quantized.engine = engine


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version (0) and usage errors (2)
        return int(e.code or 0)
    run: Callable[[argparse.Namespace], int] = args.run
    with _quiet_torch(args.debug), without_native_noise(keep=args.debug):
        try:
            return run(args)
        except Exception as e:
            if args.debug:
                traceback.print_exc()
            print(f"qnnpy: error: {_one_line(e)}", file=sys.stderr)
            return _exit_code(e)
