"""Hub search and download against a local server speaking the hub's HTTP API:
search results, a download with progress events, cancel, resume, a 404, a dropped
connection and offline, each with its message."""

from __future__ import annotations

import os

import pytest

from engine.models import hub, hub_fetch
from tests.hub_server import FakeHub

GGUF_BYTES = bytes(range(256)) * 1200  # 300 KB: several progress events


@pytest.fixture
def fake_hub(tmp_path, monkeypatch):
    server = FakeHub(
        {
            "mlx-community/SmolLM2-135M-Instruct-4bit": {
                "config.json": b'{"model_type": "llama"}',
                "model.safetensors": b"\0" * 5000,
                "README.md": b"card",
            },
            "bartowski/SmolLM2-135M-Instruct-GGUF": {
                "SmolLM2-135M-Instruct-Q4_K_M.gguf": GGUF_BYTES,
                "SmolLM2-135M-Instruct-Q8_0.gguf": GGUF_BYTES[:1000],
            },
        },
        {
            "mlx-community/SmolLM2-135M-Instruct-4bit": {
                "tags": ["mlx", "license:apache-2.0"],
                "downloads": 500,
                "safetensors": {"total": 134515008, "parameters": {"U32": 1}},
            },
            "bartowski/SmolLM2-135M-Instruct-GGUF": {
                "tags": ["gguf", "license:apache-2.0"],
                "downloads": 900,
                "gguf": {"total": 134515008, "architecture": "llama", "context_length": 8192},
            },
        },
    )
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub_fetch, "CHUNK", 16384)  # 1 MB: one chunk for these files
    yield server
    server.close()


def test_search_lists_mlx_and_gguf_repos(fake_hub):
    found = hub.search("smollm2")
    assert [m.repo_id for m in found] == [
        "bartowski/SmolLM2-135M-Instruct-GGUF",
        "mlx-community/SmolLM2-135M-Instruct-4bit",
    ]
    gguf, mlx = found
    assert (gguf.format, gguf.downloads, gguf.license, gguf.parameters) == (
        "GGUF",
        900,
        "apache-2.0",
        134515008,
    )
    assert (mlx.format, mlx.quantization, mlx.size_bytes) == ("MLX", "4bit", 5000 + 23 + 4)
    assert [m.repo_id for m in hub.search("smollm2", fmt="MLX")] == [mlx.repo_id]
    assert hub.search("no such model") == []


def test_repo_files_are_quant_choices(fake_hub):
    files = hub.repo_files("bartowski/SmolLM2-135M-Instruct-GGUF")
    assert [(f.quantization, f.size_bytes) for f in files] == [
        ("Q4_K_M", len(GGUF_BYTES)),
        ("Q8_0", 1000),
    ]


def test_download_reports_bytes_and_lands_in_the_cache(fake_hub, tmp_path):
    events = []
    path = hub.download(
        "bartowski/SmolLM2-135M-Instruct-GGUF",
        "SmolLM2-135M-Instruct-Q4_K_M.gguf",
        on_progress=events.append,
    )
    assert path.read_bytes() == GGUF_BYTES
    assert str(path).startswith(str(tmp_path / "hub"))
    done = [e.done_bytes for e in events]
    assert len(events) >= 3 and done == sorted(done) and done[-1] == len(GGUF_BYTES)
    assert {e.total_bytes for e in events} == {len(GGUF_BYTES)}


def test_mlx_repo_downloads_its_model_files(fake_hub):
    folder = hub.download("mlx-community/SmolLM2-135M-Instruct-4bit")
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]


def test_cancel_then_resume_fetches_only_the_rest(fake_hub):
    fake_hub.slow = 0.01
    repo, name = "bartowski/SmolLM2-135M-Instruct-GGUF", "SmolLM2-135M-Instruct-Q4_K_M.gguf"
    seen = []
    with pytest.raises(hub.DownloadCancelled, match=r"cancelled after 0\.\d MB; download it again"):
        hub.download(repo, name, seen.append, should_stop=lambda: seen[-1].done_bytes > 50_000)
    got = seen[-1].done_bytes
    assert 50_000 < got < len(GGUF_BYTES)
    fake_hub.slow = 0.0
    before = len(fake_hub.bodies)
    path = hub.download(repo, name)
    assert path.read_bytes() == GGUF_BYTES
    assert fake_hub.ranges[-1] == f"bytes={got}-"  # the partial file's bytes were kept
    assert fake_hub.last_body(before + 1) == len(GGUF_BYTES) - got


def test_404_says_not_found(fake_hub):
    with pytest.raises(hub.HubError, match=r"downloading nobody/nothing/x.gguf: not found.*404"):
        hub.download("nobody/nothing", "x.gguf")
    with pytest.raises(hub.HubError, match="not found on the hub"):
        hub.repo_files("nobody/nothing")


def test_dropped_connection_says_so(fake_hub):
    fake_hub.drop = True
    repo, name = "bartowski/SmolLM2-135M-Instruct-GGUF", "SmolLM2-135M-Instruct-Q4_K_M.gguf"
    with pytest.raises(hub.HubError, match="connection to the hub dropped.*download again"):
        hub.download(repo, name)
    fake_hub.drop = False  # the connection is back: the rest is fetched
    before = len(fake_hub.bodies)
    assert hub.download(repo, name).read_bytes() == GGUF_BYTES
    start = int(fake_hub.ranges[-1].removeprefix("bytes=").rstrip("-"))
    assert len(GGUF_BYTES) // 2 - 16384 < start <= len(GGUF_BYTES) // 2  # what had arrived
    assert fake_hub.last_body(before + 1) == len(GGUF_BYTES) - start


def test_offline_says_so_at_once(fake_hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(hub.HubError, match="^offline"):
        hub.search("smollm2")
    assert fake_hub.ranges == []


def test_unreachable_hub_says_offline(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: refused
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(hub.HubError, match=r"cannot be reached \(offline\?\)"):
        hub.search("smollm2")
    assert os.environ["HF_ENDPOINT"].endswith(":9")


def test_command_line_search_download_and_404(fake_hub, capsys):
    from engine.cli import main

    assert main(["models", "--search", "smollm2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("bartowski/SmolLM2-135M-Instruct-GGUF  [GGUF ]  135 M params")
    assert "900 downloads · licence apache-2.0" in out[0]
    assert out[1].startswith("mlx-community/SmolLM2-135M-Instruct-4bit  [MLX 4bit]")
    repo, name = "bartowski/SmolLM2-135M-Instruct-GGUF", "SmolLM2-135M-Instruct-Q8_0.gguf"
    assert main(["models", "--download", repo, "--file", name, "--json"]) == 0
    assert capsys.readouterr().out.strip().endswith(name)
    assert main(["models", "--download", "nobody/nothing", "--file", "x.gguf"]) == 1
    assert "not found on the hub (404)" in capsys.readouterr().err
