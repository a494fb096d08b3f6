"""The package's shape: no import cycle, the method never imports the study, small modules, a public face."""

from __future__ import annotations

import ast
from pathlib import Path

import toporag_lib

PACKAGE = Path(toporag_lib.__file__).parent
METHOD_MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every toporag_lib module `path` imports, at any depth of the file (functions included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("toporag_lib")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("toporag_lib"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}  # `from pkg import module`
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = {t for t in imports_of(path) if t in modules}
        edges[name] = {t for t in targets if t != package and not package.startswith(t + ".") and t != "toporag_lib"}
    return edges


def test_no_import_cycle_between_modules():
    edges, state, cycles = graph(), {}, []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for target in sorted(edges[node]):
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack + [target])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_the_method_never_imports_the_study():
    offenders = {name: sorted(t for t in targets if t.startswith("toporag_lib.study"))
                 for name, targets in graph().items() if not name.startswith("toporag_lib.study")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_modules_of_the_method_stay_small():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if "study" not in p.parts and (n := len(p.read_text().splitlines())) > METHOD_MAX_LINES}
    assert long == {}


def test_the_public_api_resolves():
    for name in toporag_lib.__all__:
        assert getattr(toporag_lib, name) is not None, name
    assert toporag_lib.lift.__module__ == "toporag_lib.topology.lifting"
