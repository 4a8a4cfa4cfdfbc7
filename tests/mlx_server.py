"""A real mlx_lm.server (it ships with mlx-lm) on 127.0.0.1, for remote-backend tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def float32_copy(src, out):
    """`src` (an MLX folder) with every weight dequantized to float32, in a folder of its
    own: what mlx_lm.server serves in these tests. The default model's stored 4-bit
    weights prefill at about 10 tokens/s on a CPU (MLX's quantized kernel costs a
    one-row product per row), float32 on BLAS at over 100: the server's tests and the
    tour's walk on it spent most of their time in that prefill. The same weights as the
    engine's float32 path (compute_path.dequantize_float32), so a local run of this
    folder is the server's own computation."""
    import shutil

    from mlx_lm.utils import load_config, load_model, save_config, save_model

    from engine.backends.mlx.compute_path import dequantize_float32

    model, _config = load_model(src)
    model = dequantize_float32(model)
    drop = ("quantization", "quantization_config", "logitscope_source")
    config = {k: v for k, v in load_config(src).items() if k not in drop}
    out.mkdir(parents=True)
    save_model(out, model)
    save_config(config, out / "config.json")
    for f in src.iterdir():
        if f.suffix in (".json", ".jinja", ".model") and f.name != "config.json":
            shutil.copy(f, out / f.name)
    if not (out / "model.safetensors").exists() and not list(out.glob("model*.safetensors")):
        raise AssertionError(f"no weights written to {out}")
    return out


def start_server(model_path, tmp_path):
    port = _free_port()
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path)}  # its /v1/models scans this cache
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlx_lm.server",
            "--model",
            str(model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail("mlx_lm.server did not start within 90 s")
