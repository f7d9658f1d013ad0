"""okcore's layout: the shared modules import no estimator family, the families do not
import each other, and no okcore module imports itself back through another."""

import ast
from pathlib import Path

OKCORE = Path(__file__).resolve().parents[2] / "okcore"
#: What every estimator shares; the families (trees/, kernel_models/) build on it.
SHARED = ["base", "callbacks", "cost", "losses", "_validation", "exceptions", "_shipping"]


def module_name(path: Path) -> str:
    parts = path.relative_to(OKCORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """okcore module -> the okcore modules it imports (relative imports resolved)."""
    graph: dict[str, set[str]] = {}
    for path in OKCORE.rglob("*.py"):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")
                if node.level:
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.startswith("okcore"):
                    found.add(target)
                    found.update(f"{target}.{a.name}" for a in node.names)
        graph[name] = found
    return {k: {m for m in v if m in graph} for k, v in graph.items()}


def test_shared_modules_import_no_estimator_family() -> None:
    graph = imports()
    for name in SHARED:
        bad = {
            m
            for m in graph[f"okcore.{name}"]
            if m.startswith(("okcore.trees", "okcore.kernel_models"))
        }
        assert bad == set(), f"okcore.{name} imports {bad}"


def test_families_do_not_import_each_other_and_outputs_imports_no_family() -> None:
    graph = imports()
    for name, deps in graph.items():
        if name.startswith("okcore.trees"):
            assert not any(d.startswith("okcore.kernel_models") for d in deps), name
        if name.startswith("okcore.kernel_models"):
            assert not any(d.startswith("okcore.trees") for d in deps), name
        if name.startswith("okcore.outputs"):
            assert not any(d.startswith(("okcore.trees", "okcore.kernel_models")) for d in deps)


def test_no_import_cycle_between_okcore_modules() -> None:
    graph = imports()
    graph = {
        k: {d for d in v if d != k and not k.startswith(d + ".") and d != "okcore"}
        for k, v in graph.items()
    }
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in graph[node]:
            assert state.get(dep) != 1, " -> ".join([*stack, node, dep])
            if dep not in state:
                visit(dep, [*stack, node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])
