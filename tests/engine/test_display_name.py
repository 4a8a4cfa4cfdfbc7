"""Display names from the model's own metadata, short names for server models."""

from __future__ import annotations

import json

from engine.models.display_name import display_name, short_model_id, size_label


def _folder(tmp_path, name: str, source: dict | None) -> str:
    folder = tmp_path / name
    folder.mkdir()
    config = {"model_type": "gemma3_text"}
    if source is not None:
        config["logitscope_source"] = source
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def test_hashed_gguf_folder_is_named_from_its_metadata(tmp_path):
    path = _folder(
        tmp_path,
        "gemma-3-270m-q4_k_m-a5fd3b6223",
        {"format": "gguf", "name": "Gemma 3 270m", "file_type": "Q4_K_M"},
    )
    label = "GGUF Q4_K_M → MLX 4/5/8-bit, group 32"
    assert display_name("gemma-3-270m-q4_k_m-a5fd3b6223", path, label, 268_000_000) == (
        "Gemma 3 270M · Q4_K_M"
    )


def test_readable_names_keep_their_name_and_gain_size_and_quantization(tmp_path):
    path = _folder(
        tmp_path, "SmolLM2-135M-Instruct", {"name": "Smollm2 135M 8k", "file_type": "Q4_1"}
    )
    assert display_name("SmolLM2-135M-Instruct", path, "GGUF Q4_1 → MLX", 134_515_008) == (
        "SmolLM2-135M-Instruct · Q4_1"
    )
    plain = _folder(tmp_path, "tiny", None)
    assert display_name("org/tiny", plain, "4-bit (group 64)", 1_500_000_000) == (
        "tiny 1.5B · 4-bit"
    )
    assert display_name("mlx-community/Qwen-0.5B-4bit", plain, "4-bit (group 64)") == (
        "Qwen-0.5B-4bit"
    )


def test_server_models_get_a_short_name():
    assert short_model_id("/home/me/models/qwen2.5-0.5b-q4_k_m.gguf") == "qwen2.5-0.5b-q4_k_m"
    assert short_model_id("mlx-community/SmolLM2-135M-Instruct") == "SmolLM2-135M-Instruct"
    assert short_model_id("llama3.2:1b") == "llama3.2:1b"
    assert size_label(134_515_008) == "135M" and size_label(None) == ""


def test_a_runs_model_has_the_pickers_name_everywhere(tmp_path):
    from pathlib import Path

    from engine.models.display_name import model_name
    from engine.run.records import ModelRecord, to_dict
    from engine.sessions.export import to_markdown
    from engine.sessions.export_html import to_html
    from engine.sessions.session_log import RunLog, SessionLog

    folder = "gemma-3-270m-q4_k_m-a5fd3b6223"
    path = _folder(tmp_path, folder, {"name": "Gemma 3 270m", "file_type": "Q4_K_M"})
    label = "GGUF Q4_K_M → MLX 4/5/8-bit, group 32"
    record = ModelRecord(
        folder, path, "gemma3", label, 10**8, 32768, "cpu", 0.1, parameters=268_000_000
    )
    assert model_name(record) == model_name(to_dict(record)) == "Gemma 3 270M · Q4_K_M"
    gone = to_dict(record) | {"path": str(tmp_path / "gone")}  # the folder was removed
    assert model_name(gone) == "gemma-3-270M-q4_k_m"  # no hash at least
    server = to_dict(record) | {"name": "/srv/qwen2.5-0.5b.gguf", "backend": "openai"}
    assert model_name(server) == "qwen2.5-0.5b" and model_name(None) == "?"
    run = RunLog("s/1", "s", 0.0, "Q", {}, model=to_dict(record))
    session = SessionLog("s", Path("s.jsonl"), 0.0, runs=[run])
    assert "model `Gemma 3 270M · Q4_K_M`" in to_markdown(session)
    html = to_html(session)
    assert "Gemma 3 270M · Q4_K_M" in html and folder not in html.replace(path, "")


def test_inside_tokenizer_names_each_model_as_the_picker(tmp_path):
    from types import SimpleNamespace

    from engine.models.token_explorer import counts_by_model

    folder = "gemma-3-270m-q4_k_m-a5fd3b6223"
    path = _folder(tmp_path, folder, {"name": "Gemma 3 270m", "file_type": "Q4_K_M"})
    entry = SimpleNamespace(name=folder, path=path, quantization="GGUF", parameters=268_000_000)
    assert list(counts_by_model("hello", [entry])) == ["Gemma 3 270M · Q4_K_M"]


def test_two_copies_of_one_model_keep_a_row_each(tmp_path):
    from types import SimpleNamespace

    from engine.models.token_explorer import counts_by_model

    a = _folder(tmp_path, "SmolLM2-135M-Instruct", None)
    (tmp_path / "copy").mkdir()
    b = _folder(tmp_path / "copy", "SmolLM2-135M-Instruct", None)
    entries = [
        SimpleNamespace(name="SmolLM2-135M-Instruct", path=p, quantization="", parameters=None)
        for p in (a, b)
    ]
    assert list(counts_by_model("hi", entries)) == [
        "SmolLM2-135M-Instruct",
        f"SmolLM2-135M-Instruct ({b})",
    ]
