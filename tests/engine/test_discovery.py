"""Discovery of the models other tools keep: each tool's folder layout built around the
shipped SmolLM2 GGUF in a temporary home; the listing, names and sources; nothing
written there; an Ollama blob opened answers greedily like the default model."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from engine.models.catalogue import list_discovered
from engine.models.discovery import discover


@pytest.fixture
def home(tmp_path, monkeypatch, smollm_gguf):
    """A home with LM Studio, Ollama, an HF cache and llama.cpp's cache, each holding
    the shipped GGUF (hard-linked, not copied: discovery follows no symbolic link out
    of the folder it scans)."""
    for var in ("OLLAMA_MODELS", "LLAMA_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / ".cache" / "huggingface" / "hub"))

    def link(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link(smollm_gguf, path)

    link(tmp_path / ".lmstudio/models/bartowski/SmolLM2-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf")
    link(tmp_path / ".lmstudio/models/bartowski/SmolLM2-GGUF/mmproj-f16.gguf")  # not a model
    digest = hashlib.sha256(b"stand-in: discovery never hashes blobs").hexdigest()
    link(tmp_path / f".ollama/models/blobs/sha256-{digest}")
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "digest": "sha256:" + "0" * 64,
            "size": 10,
        },
        "layers": [
            {
                "mediaType": "application/vnd.ollama.image.model",
                "digest": f"sha256:{digest}",
                "size": smollm_gguf.stat().st_size,
            },
            {
                "mediaType": "application/vnd.ollama.image.template",
                "digest": "sha256:" + "1" * 64,
                "size": 5,
            },
        ],
    }
    m = tmp_path / ".ollama/models/manifests/registry.ollama.ai/library/smollm2/135m"
    m.parent.mkdir(parents=True)
    m.write_text(json.dumps(manifest))
    commit = "a" * 40
    hf = tmp_path / ".cache/huggingface/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct-GGUF"
    link(hf / f"snapshots/{commit}/smollm2-135m-instruct-q4_1.gguf")
    (hf / "refs").mkdir()
    (hf / "refs/main").write_text(commit)
    link(tmp_path / ".cache/llama.cpp/HuggingFaceTB_SmolLM2-135M-Instruct-GGUF_q4_1.gguf")
    return tmp_path


def _tree(root):
    return sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*"))


def test_each_tool_is_listed_with_its_name_and_source(home):
    before = _tree(home)
    found = [(f.source, f.name) for f in discover()]
    assert found == [
        ("LM Studio", "bartowski/SmolLM2-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf"),
        ("Ollama", "smollm2:135m"),
        (
            "Hugging Face cache",
            "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1.gguf",
        ),
        ("llama.cpp cache", "HuggingFaceTB_SmolLM2-135M-Instruct-GGUF_q4_1.gguf"),
    ]
    infos = list_discovered()
    assert {(i.architecture, i.quantization, i.context_length) for i in infos} == {
        ("llama", "GGUF Q4_1", 8192)
    }
    assert {i.kv_shape for i in infos} == {(30, 3, 64)}
    assert infos[1].parameters == pytest.approx(134.5e6, rel=0.01)
    assert _tree(home) == before  # nothing written in the tools' folders


def test_logitscope_models_lists_them_with_source_and_fit(home, capsys):
    from engine.cli import main

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "smollm2:135m  [Ollama]\n    llama · 135 M parameters · GGUF Q4_1" in out
    assert "bartowski/SmolLM2-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf  [LM Studio]" in out
    assert "fits: 0.3 GB of" in out  # 0.1 GB of weights + 8,192 tokens x 23 KB (float16 KV)


def test_user_folder_and_env_roots(home, tmp_path_factory, monkeypatch, smollm_gguf):
    from engine.models.model_prefs import set_user_folders

    mine = tmp_path_factory.mktemp("mine")
    os.link(smollm_gguf, mine / "my-model.gguf")
    moved = tmp_path_factory.mktemp("ollama")
    os.rename(home / ".ollama/models", moved / "models")
    monkeypatch.setenv("OLLAMA_MODELS", str(moved / "models"))
    set_user_folders([mine])
    try:
        names = {(f.source, f.name) for f in discover()}
    finally:
        set_user_folders([])
    assert ("Ollama", "smollm2:135m") in names
    assert (f"folder {mine}", "my-model.gguf") in names


def test_ollama_blob_opens_under_its_own_name_and_answers_like_the_default(
    home, smollm, monkeypatch, tmp_path_factory
):
    from engine.backends.mlx.generate import generate_records
    from engine.backends.mlx.loader import load_model, resolve_model
    from engine.run.settings import SamplingSettings

    # converted into a folder of this test's own: the shared models folder would gain a
    # second copy of the default model, which the lab's quantization A/B would list
    monkeypatch.setenv("LOGITSCOPE_MODELS_DIR", str(tmp_path_factory.mktemp("models")))
    blob = next(f.path for f in discover() if f.source == "Ollama")
    folder = resolve_model(str(blob))
    # named from the file's general.name ("Smollm2 135M 8k Lc100K Mix1 Ep2"), not sha256-…
    assert folder.name.startswith("Smollm2_135M_8k_Lc100K_Mix1_Ep2-")
    lm = load_model(folder, prefer="speed")[0]
    greedy = SamplingSettings(temperature=0, max_tokens=6, seed=0)

    def ids(model):
        return [
            r.token_id for r in generate_records(model, "What is 2+2?", greedy) if r.type == "token"
        ]

    assert ids(lm) == ids(smollm)
