"""Importing qnnpy: fast (PyTorch loads with the first name that needs it), and from the clone's root either
the built package (an editable install) or one line saying what to do."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _python(code: str, cwd: Path, safe_path: bool = True) -> subprocess.CompletedProcess:
    flags = ["-P"] if safe_path else []
    return subprocess.run([sys.executable, *flags, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_import_qnnpy_loads_torch_only_when_a_name_needs_it(tmp_path):
    result = _python("import sys, qnnpy; print('torch' in sys.modules); qnnpy.from_torch; print('torch' in sys.modules)",
                     tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]


def test_public_names_resolve_and_compare_is_the_function(tmp_path):
    code = ("import qnnpy, qnnpy.comparison; print(sorted(set(qnnpy.__all__) - set(dir(qnnpy)))); "
            "print(callable(qnnpy.compare), qnnpy.load.__qualname__, qnnpy.__version__)")
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    missing, rest = result.stdout.splitlines()
    assert missing == "[]"
    assert rest.split()[:2] == ["True", "QDQModule.load"]


def test_import_in_the_clone_root_works_or_says_what_to_do():
    result = _python("import qnnpy; from qnnpy import tvm_bridge; print(qnnpy.__file__)", REPO, safe_path=False)
    if result.returncode == 0:  # an editable install: the source tree with the built extension
        assert result.stdout.strip() == str(REPO / "qnnpy" / "__init__.py")
    else:
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("ImportError: qnnpy's C++ extension qnnpy._core is not importable from ")
        assert "pip install -e ." in last
