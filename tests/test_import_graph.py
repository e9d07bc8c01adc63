"""The layers of docs/architecture.md, checked over the import graph of app code.

Every import counts, including those inside functions: an import moved into a function
to dodge a cycle is a cycle all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "records",
    "sweeper",
    "erasure",
    "api",
    "backtest",
    "mcp_server",
    "memadmin",
    "bench",
    "memadmin_client",
)

# records is the memory domain: it never imports the apps that act on it.
RECORDS_MAY_NOT_IMPORT = ("sweeper", "erasure", "api", "backtest", "mcp_server")
# Modules still reaching up (none: keep it that way).
ALLOWED_UPWARD: set[str] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            found[_module_name(path)] = path
    return found


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """module -> the app modules it imports (a ``from package import module`` names the
    module itself)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(name, path, node)
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    targets.append(sub if sub in modules else source)
            for target in targets:
                while target and target not in modules:  # a.b.c, where a.b is the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_graph_sees_imports_inside_functions():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    tree = import_graph()
    assert "records.policy" in tree["records.victims"]  # a relative, top-level import
    assert "records.models" in tree["erasure.models"]


def test_no_import_cycle_between_modules():
    cycles = _cycles(import_graph())
    assert cycles == [], "import cycles (each list imports itself round): " + "; ".join(
        " -> ".join(c) for c in cycles
    )


def test_records_imports_nothing_from_the_apps_above_it():
    upward = sorted(
        (module, target)
        for module, targets in import_graph().items()
        if module.split(".")[0] == "records"
        for target in targets
        if target.split(".")[0] in RECORDS_MAY_NOT_IMPORT and module not in ALLOWED_UPWARD
    )
    assert upward == [], "records reaches up: " + ", ".join(f"{m} -> {t}" for m, t in upward)
