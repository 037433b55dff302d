"""The modules of the qnnpy package import each other without cycles: module-level imports (TYPE_CHECKING
included), and also counting the imports inside functions."""
from __future__ import annotations

import ast
import importlib.machinery
from pathlib import Path

import qnnpy

PACKAGE = Path(qnnpy.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _extension_modules() -> set[str]:
    """Compiled modules (``qnnpy._core``): imported by name, importing nothing of qnnpy. They lie in the
    package folder, or with an editable install in another folder of the package's path."""
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    return {"qnnpy." + ".".join(p.relative_to(folder).with_name(p.name.split(".")[0]).parts)
            for folder in map(Path, qnnpy.__path__) for p in folder.rglob("*")
            if any(p.name.endswith(s) for s in suffixes)}


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Import statements run when the module is imported: at top level or in top-level if/try blocks
    (``if TYPE_CHECKING:`` too); imports inside functions are deliberately lazy and not counted."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            found.append(statement)
        elif isinstance(statement, (ast.If, ast.Try)):
            pending += statement.body + statement.orelse + getattr(statement, "finalbody", [])
            pending += [s for handler in getattr(statement, "handlers", []) for s in handler.body]
    return found


def _imported_modules(statement: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    """The qnnpy source modules one import statement names (``from a import b``: ``a.b`` if it is a module)."""
    if isinstance(statement, ast.Import):
        names = [alias.name for alias in statement.names]
    else:
        base = statement.module or ""
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in statement.names]
    return {name for name in names if name in known}


def _all_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, those inside functions (run on first use) included."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def import_graph(lazy: bool = False) -> dict[str, set[str]]:
    """Module -> the qnnpy modules it imports when it is imported (``lazy``: or when any of its functions runs)."""
    sources = _source_modules()
    known = set(sources) | _extension_modules()
    graph = {name: set() for name in known}
    for name, path in sources.items():
        tree = ast.parse(path.read_text())
        for statement in _all_imports(tree) if lazy else _top_level_imports(tree):
            graph[name] |= _imported_modules(statement, known)
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = "open"
        stack.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        state[name] = "done"
        stack.pop()
        return None

    for name in sorted(graph):
        if name not in state:
            cycle = visit(name)
            if cycle:
                return cycle
    return None


def test_the_import_graph_sees_the_package_modules():
    graph = import_graph()
    assert "qnnpy.executor" in graph["qnnpy.module"]
    assert "qnnpy._core" in graph["qnnpy.executor"]
    assert "qnnpy.convert.ops" in graph["qnnpy.convert.converter"]
    assert "qnnpy.tvm_bridge" not in graph["qnnpy.comparison"]  # compare_tvm imports it when it runs
    assert "qnnpy.tvm_bridge" in import_graph(lazy=True)["qnnpy.comparison"]


def test_no_module_imports_itself_through_others():
    cycle = _find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_cycle_even_through_imports_inside_functions():
    """Deferred imports (inside functions) make no circle either: e.g. the TVM side knows QDQModule, and
    QDQModule does not call into the TVM side."""
    cycle = _find_cycle(import_graph(lazy=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_cycle_is_found():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
