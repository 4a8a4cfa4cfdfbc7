"""Every third-party module the project imports is declared in pyproject.toml:
nothing works only because another package happens to pull it in."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OWN = {"engine", "app", "tests", "scripts"}
# The frozen app runs its bundled pip to fetch the default model (app/main.py --run-pip);
# in a virtual environment pip is always there.
NOT_DECLARED = {"pip"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(extras: tuple[str, ...] = ()) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    return {_norm(re.match(r"[A-Za-z0-9._-]+", r).group(0)) for r in reqs}


def third_party_imports(folders: tuple[str, ...]) -> dict[str, str]:
    """Top-level third-party modules imported under `folders` -> one file importing it."""
    found: dict[str, str] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in OWN | NOT_DECLARED:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def _undeclared(folders: tuple[str, ...], extras: tuple[str, ...]) -> list[str]:
    declared = _declared(extras)
    dists = importlib.metadata.packages_distributions()  # import name -> distributions
    missing = []
    for module, where in sorted(third_party_imports(folders).items()):
        names = {_norm(d) for d in dists.get(module, [module])}
        if not names & declared:
            missing.append(f"{module} (imported in {where}; distribution {sorted(names)})")
    return missing


def test_the_engine_and_the_app_declare_every_import():
    found = third_party_imports(("engine", "app"))
    # The scan sees what it must: lazy imports inside functions count too.
    assert {"jinja2", "huggingface_hub", "tqdm", "httpx", "PySide6", "mlx_lm"} <= found.keys()
    assert _undeclared(("engine", "app"), ()) == []


def test_scripts_and_tests_declare_every_import():
    assert _undeclared(("scripts", "tests"), ("dev",)) == []


def test_the_check_catches_an_undeclared_import(tmp_path, monkeypatch):
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "x.py").write_text("def f():\n    import yaml\n")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert [m.split(" ")[0] for m in _undeclared(("engine",), ())] == ["yaml"]
