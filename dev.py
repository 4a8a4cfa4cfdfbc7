#!/usr/bin/env python3
"""Set up Logitscope and run it: `python3 dev.py app` or `python3 dev.py test`.

Needs only Python 3.11+. Creates `.venv`, installs the project and its
dependencies into it (again only when pyproject.toml changed), fetches and
converts the default model once, then opens the app or runs every check.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def run(*cmd: str | Path, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    code = subprocess.call([str(c) for c in cmd], cwd=ROOT, **kw)
    if code:
        sys.exit(code)


def setup() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"Logitscope needs Python 3.11 or newer (this is {sys.version.split()[0]})")
    if not PY.exists():
        print(f"Creating the virtual environment in {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    stamp = VENV / ".setup-stamp"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text() != digest:
        run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        run(PY, "-m", "pip", "install", "--quiet", "-e", ".[dev]")
        stamp.write_text(digest)
    run(PY, "-m", "engine", "models", "--fetch-default")


def app(args: list[str]) -> None:
    setup()
    run(PY, "-m", "app", *args)


def test(args: list[str]) -> None:
    setup()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    run(BIN / "ruff", "check", ".")
    run(BIN / "ruff", "format", "--check", ".")
    run(BIN / "lint-imports")
    run(PY, "-m", "pytest", "-q", *args, env=env)


def main() -> None:
    commands = {"app": app, "test": test, "setup": lambda _a: setup()}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit("usage: python3 dev.py app|test|setup [extra arguments]")
    commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
