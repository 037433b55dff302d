"""Every relative link of the README, the user guide's pages, the notebooks' README and benchmarks/RESULTS.md
points at a file that exists, and every #anchor at one of that page's headings outside code blocks (GitHub's
rule: lower case, punctuation dropped, spaces to hyphens; a repeated heading's anchor takes -1, -2, ...)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", REPO / "notebooks" / "README.md", REPO / "benchmarks" / "RESULTS.md",
         *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _outside_code(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    for line in _outside_code(page.read_text()).splitlines():
        if re.match(r"#{1,6} ", line):
            anchor = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            repeat = sum(a == anchor or re.fullmatch(re.escape(anchor) + r"-\d+", a) is not None for a in anchors)
            anchors.add(f"{anchor}-{repeat}" if repeat else anchor)
    return anchors


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists()], ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(_outside_code(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: {broken}"
