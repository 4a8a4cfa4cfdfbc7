"""engine/ has no package import cycle: at every level (engine's own children, and the
children of each of its packages) the graph of which child imports which, a package
standing for everything under it, is acyclic. The layers contract in pyproject.toml orders
the top level; this test also holds inside a layer and inside each package. The graph is
read from the source with ast: every import, at any depth, as import-linter counts them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def module_name(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ENGINE.rglob("*.py"))}
PACKAGES = sorted(m for m, p in MODULES.items() if p.name == "__init__.py")


def imports_of(module: str) -> set[str]:
    """The engine modules (or packages) `module` imports, anywhere in its source."""
    path = MODULES[module]
    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base)
    return {m for m in found if m == "engine" or m.startswith("engine.")}


IMPORTS = {m: imports_of(m) for m in MODULES}


def child_of(package: str, module: str) -> str | None:
    """The child of `package` that holds `module`, or None when it is not under it."""
    if not module.startswith(package + "."):
        return None
    return package + "." + module[len(package) + 1 :].split(".")[0]


def package_edges(package: str) -> dict[str, set[str]]:
    """Which children of `package` import which, where one of the two is a package (a
    module importing a sibling module is the package's own business)."""
    edges: dict[str, set[str]] = {}
    for importer, imported in IMPORTS.items():
        a = child_of(package, importer)
        if a is None:
            continue
        edges.setdefault(a, set())
        for target in imported:
            b = child_of(package, target)
            if b is None or a == b:
                continue
            if a in PACKAGES or b in PACKAGES:
                edges[a].add(b)
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


@pytest.mark.parametrize("package", PACKAGES)
def test_no_package_cycle(package):
    cycle = find_cycle(package_edges(package))
    assert cycle is None, "package import cycle: " + " -> ".join(cycle)


def test_the_graph_is_read():
    """The graph sees the imports the layers rest on (a wrong reader would pass vacuously)."""
    assert "engine.run.records" in IMPORTS["engine.process.client"]
    assert package_edges("engine")["engine.process"] >= {"engine.run", "engine.backends"}


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_root_holds_only_main_and_the_bottom_layer():
    """engine/'s own modules are `python -m engine` and the bottom layer; everything else
    lives in a package named for its concept."""
    root = {m for m in MODULES if m.count(".") == 1 and m not in PACKAGES}
    assert root == {"engine.__main__", "engine.errors", "engine.plain_data"}
