"""The frozen Linux app (PyInstaller) against the venv: built from this checkout, its
self-test must answer greedily with the same token ids on the same compute path
(OpenBLAS from the bundle, as fast_blas.py loads it from site-packages), at a
prefill speed of the same order.

Opt-in with LOGITSCOPE_TEST_FROZEN=1 (the Linux workflow's archive job sets it): from
scratch it takes 3-4 minutes on two cores, over 2 of them the build, which would take
the suite (about 12 minutes) to 15; skipped, the run's summary says so. The build is
kept in build/frozen-test/ and reused while its inputs (sources, spec, installed
packages) are unchanged (then about a minute). LOGITSCOPE_FROZEN_APP=PATH checks an
app already built (the unpacked archive) instead.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.bench_frozen import self_test

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "frozen-test"
APP = BUILD / "dist" / "Logitscope" / "Logitscope"
INPUTS = ("app", "engine", "packaging", "resources")
RUNS = 2  # self-tests each, alternated: best-of for the speed check
MIN_PREFILL_RATIO = 0.5  # frozen/venv; the bundle without OpenBLAS was 0.12-0.18

SKIPPED = "the frozen app was not built or checked: set LOGITSCOPE_TEST_FROZEN=1"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="the Linux build (macOS: CI workflow)"),
    pytest.mark.skipif(
        os.environ.get("LOGITSCOPE_TEST_FROZEN") != "1",
        reason=SKIPPED,
    ),
]


def _inputs_digest() -> str:
    """What the build depends on: every source file under INPUTS and the packages."""
    h = hashlib.sha256(sys.version.encode())
    for folder in INPUTS:
        for f in sorted((ROOT / folder).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes())
    freeze = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    )
    h.update(freeze.stdout.encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def frozen_app() -> Path:
    """The frozen app, built unless build/frozen-test/ holds one from the same inputs."""
    if os.environ.get("LOGITSCOPE_FROZEN_APP"):
        return Path(os.environ["LOGITSCOPE_FROZEN_APP"]).resolve()
    try:
        import PyInstaller  # noqa: F401  (a dev dependency in pyproject.toml)
    except ImportError:
        pytest.fail("PyInstaller is not installed: run `python3 dev.py setup`")
    stamp = BUILD / "inputs.sha256"
    digest = _inputs_digest()
    if not (APP.is_file() and stamp.is_file() and stamp.read_text() == digest):
        stamp.unlink(missing_ok=True)
        env = {
            **os.environ,
            "LOGITSCOPE_BUILD_PYTHON": sys.executable,
            "LOGITSCOPE_DIST_DIR": str(BUILD / "dist"),
            "LOGITSCOPE_WORK_DIR": str(BUILD / "work"),
        }
        p = subprocess.run(
            ["bash", str(ROOT / "packaging" / "build_linux.sh"), "--no-archive"],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        stamp.write_text(digest)
    return APP


def _self_test(command: list[str]) -> dict:
    details, out = self_test(command)
    assert "Paris" in out and details, out
    return details


def test_frozen_app_answers_like_the_venv_on_the_same_compute_path(frozen_app, default_model_path):
    venv, frozen = [], []
    for _ in range(RUNS):  # alternated, so both see the same machine load
        venv.append(_self_test([sys.executable, "-m", "app"]))
        frozen.append(_self_test([str(frozen_app)]))
    assert len(venv[0]["token_ids"]) >= 5
    for run in venv[1:] + frozen:  # every run: the same greedy answer, path and device
        assert run["token_ids"] == venv[0]["token_ids"]
        assert run["compute"] == venv[0]["compute"]
        assert run["device"] == "CPU"
    if platform.machine() == "x86_64":  # ngsolve-openblas has x86-64 wheels only
        assert "OpenBLAS (libopenblas" in frozen[0]["compute"], frozen[0]["compute"]
    best_venv = max(r["prefill_tps"] for r in venv)
    best_frozen = max(r["prefill_tps"] for r in frozen)
    assert best_frozen >= MIN_PREFILL_RATIO * best_venv, (best_frozen, best_venv)
