"""The layout of service/: every module imports, no import cycle between its sub-packages
or its modules, and nothing reaches into okcore's private names or private submodules.

Imports are read from the source (an AST scan), lazy ones inside functions and those under
``TYPE_CHECKING`` included: a cycle hidden in a function is still a cycle to a reader.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import service

ROOT = Path(service.__file__).parent
MODULES = sorted(
    ".".join(("service", *p.relative_to(ROOT).with_suffix("").parts)).removesuffix(".__init__")
    for p in ROOT.rglob("*.py")
)
# imported only where the optional extra is installed (docs/DEPLOY.md)
OPTIONAL = {"service.jobs.cluster": "distributed"}


def _source(module: str) -> Path:
    rel = Path(*module.split(".")[1:])
    package = ROOT / rel / "__init__.py"
    return package if package.exists() else (ROOT / rel).with_suffix(".py")


def _imports(module: str) -> Iterator[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import statement of ``module``."""
    tree = ast.parse(_source(module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, [alias.name for alias in node.names]


def _service_edges(module: str) -> set[str]:
    """The service modules ``module`` imports (``from service.x import y`` counts
    ``service.x.y`` when that is a module, else ``service.x``)."""
    edges = set()
    for target, names in _imports(module):
        if target != "service" and not target.startswith("service."):
            continue
        submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
        edges.update(submodules or [target])
    edges.discard(module)
    return edges


def _group(module: str) -> str:
    """A module's sub-package (``service.jobs``) or, at the top, the module itself."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


@pytest.mark.parametrize("module", MODULES)
def test_every_module_imports(module: str) -> None:
    if module in OPTIONAL:
        pytest.importorskip(OPTIONAL[module], reason="the dask extra is not installed")
    importlib.import_module(module)


def test_no_import_cycle_between_modules() -> None:
    graph = {m: _service_edges(m) for m in MODULES}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_no_import_cycle_between_sub_packages() -> None:
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        if module == "service":
            continue  # the package itself: __version__ only
        edges = {_group(t) for t in _service_edges(module)} - {_group(module), "service"}
        graph.setdefault(_group(module), set()).update(edges)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_lower_layers_do_not_import_routes_or_the_app() -> None:
    """Routes and the app sit on top: nothing below them imports them."""
    top = ("service.routes", "service.app", "service.deps", "service.cli")
    for module in MODULES:
        if module.startswith(top):
            continue
        reached = {t for t in _service_edges(module) if t.startswith(top)}
        assert not reached, f"{module} imports {sorted(reached)}"


def test_service_uses_no_private_okcore_names() -> None:
    for module in MODULES:
        tree = ast.parse(_source(module).read_text(encoding="utf-8"))
        for target, names in _imports(module):
            if target != "okcore" and not target.startswith("okcore."):
                continue
            private = [p for p in target.split(".") + names if p.startswith("_")]
            assert not private, f"{module} imports {target}: {private} are okcore's privates"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                base = node.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and base.id == "okcore":
                    raise AssertionError(f"{module} reads okcore's private {node.attr}")
