"""Every fenced Python block of the README and the documentation runs: the blocks of one page, in order, as
one script in a fresh process whose working folder is outside the clone (so it imports the installed qnnpy,
as a reader would). A block that raises fails the test with the page's name and the error."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
TIMEOUT_SECONDS = 300


def python_blocks(page: Path) -> list[str]:
    """The fenced ```python blocks of a Markdown page, in order."""
    return BLOCK.findall(page.read_text())


def pages_with_python() -> list[str]:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return [str(page.relative_to(REPO)) for page in pages if python_blocks(page)]


def test_the_blocks_are_found():
    assert python_blocks(REPO / "README.md")
    assert {"README.md", "docs/convert.md", "docs/run.md", "docs/tvm.md", "docs/deploy.md"} <= set(pages_with_python())
    assert python_blocks(Path(__file__)) == []  # this file's fences are in strings that do not start a line


@pytest.mark.parametrize("page", pages_with_python())
def test_the_python_blocks_of_the_page_run(page, tmp_path):
    script = tmp_path / "page.py"
    script.write_text("\n\n".join(python_blocks(REPO / page)))
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-P", str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=TIMEOUT_SECONDS)
    assert result.returncode == 0, f"{page}: its Python blocks fail:\n{result.stderr[-3000:]}"
    print(f"{page}: {time.perf_counter() - start:.1f} s")
