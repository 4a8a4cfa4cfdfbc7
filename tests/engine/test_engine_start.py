"""An engine process can be started before its first request, and told to import its
local backend's libraries at once (the app starts it while the window builds, so the
window's first load finds MLX and the tokenizer libraries imported)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.process.client import EngineClient

ROOT = Path(__file__).resolve().parents[2]
SERVE_ONE_SHUTDOWN = """
import multiprocessing as mp, sys, threading
from engine.process import operations as ops
from engine.process.worker import worker_main
req_child, requests = mp.Pipe(duplex=False)
events, evt_child = mp.Pipe(duplex=False)
before = "mlx_lm" in sys.modules
requests.send(ops.Request(0, ops.Shutdown()))  # read at once, served after the warm-up
worker_main(req_child, evt_child, warm={warm!r})
print(before, "mlx_lm" in sys.modules)
"""


def _imports_mlx_lm(warm: str | None) -> tuple[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", SERVE_ONE_SHUTDOWN.format(warm=warm)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = out.stdout.split()
    return before, after


def test_a_warm_worker_imports_mlx_lm_before_serving_requests():
    assert _imports_mlx_lm("mlx") == ("False", "True")


def test_a_worker_without_warm_up_imports_nothing_until_asked():
    assert _imports_mlx_lm(None) == ("False", "False")


def test_start_starts_the_process_before_any_request():
    client = EngineClient()
    assert client.pid is None
    try:
        client.start(warm="mlx")
        assert client.is_alive() and client.pid is not None
        pid = client.pid
        client.start()  # already running: the same process
        assert client.pid == pid
    finally:
        client.close()
    assert not client.is_alive()


def test_engines_start_from_a_forkserver_on_linux_only(monkeypatch):
    from engine.process import start_method

    monkeypatch.delenv("LOGITSCOPE_ENGINE_START", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    ctx = start_method.engine_context()
    assert ctx.get_start_method() == "forkserver"
    for platform in ("darwin", "win32"):  # forking after system frameworks: never there
        monkeypatch.setattr(sys, "platform", platform)
        assert start_method.engine_context().get_start_method() == "spawn"
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(sys, "frozen", True, raising=False)  # the packaged app
    assert start_method.engine_context().get_start_method() == "spawn"
    monkeypatch.delattr(sys, "frozen")
    monkeypatch.setenv("LOGITSCOPE_ENGINE_START", "spawn")
    assert start_method.engine_context().get_start_method() == "spawn"


def test_a_command_line_run_starts_its_engine_without_a_forkserver():
    """`logitscope` starts one engine and ends: a fresh interpreter; a caller of
    engine.cli.main with its own arguments (a test, a script) keeps its forkserver."""
    script = (
        "import contextlib, io, sys\n"
        "from engine.cli import main\n"
        "from engine.process.start_method import engine_context as ctx\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--version'])\n"
        "print(ctx().get_start_method())\n"
        "sys.argv = ['logitscope', '--version']\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main()\n"
        "print(ctx().get_start_method())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LOGITSCOPE_ENGINE_START"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    caller = "forkserver" if sys.platform == "linux" else "spawn"
    assert out.stdout.split() == [caller, "spawn"]


@pytest.mark.slow  # two engine processes: not for the fast tier
def test_a_later_engine_sees_the_callers_environment_and_folder(
    tmp_path, monkeypatch, tiny_model_dir
):
    """A forked engine starts from its forkserver, which kept the environment and folder
    of the first engine's start: the client's current ones must reach it."""
    import shutil

    from engine.run.records import ErrorRecord, ModelRecord

    first = EngineClient()
    try:
        assert isinstance(list(first.load(str(tiny_model_dir)))[-1], ModelRecord)
    finally:
        first.close()  # the forkserver (Linux) lives on with this environment
    models = tmp_path / "models"
    shutil.copytree(tiny_model_dir, models / "named-tiny")
    monkeypatch.setenv("LOGITSCOPE_MODELS_DIR", str(models))
    monkeypatch.chdir(tmp_path)
    second = EngineClient()
    try:
        by_name = list(second.load("named-tiny"))[-1]  # found only in the new models folder
        assert isinstance(by_name, ModelRecord), getattr(by_name, "message", by_name)
        assert Path(by_name.path).resolve() == (models / "named-tiny").resolve()
        relative = list(second.load("models/named-tiny"))[-1]  # only from the new folder
        assert isinstance(relative, ModelRecord) and not isinstance(relative, ErrorRecord)
    finally:
        second.close()


def test_closing_during_a_run_nobody_reads_ends_the_engine_without_a_kill(tiny_model_dir):
    """`logitscope generate ... | head`: the reader stops and the engine fills the pipe with
    replies. close() cancels the run and stops reading: the engine ends by itself (exit
    code 0) rather than being killed after a 3 s wait."""
    from engine.run.records import TokenRecord
    from engine.run.settings import SamplingSettings

    client = EngineClient()
    settings = SamplingSettings(temperature=0, max_tokens=4000, top_n=50, chat_template=False)
    records = client.generate("hello", settings, str(tiny_model_dir))
    while not isinstance(next(records), TokenRecord):
        pass  # loaded, and decoding: far more replies than the pipe holds are on the way
    proc = client._proc
    client.close()
    assert proc.exitcode == 0
