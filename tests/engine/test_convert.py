"""GGUF -> MLX conversion of the real SmolLM2 file, and model-folder errors."""

from __future__ import annotations

import json
import os
import shutil

import mlx.core as mx
import pytest

from engine.backends.mlx.gguf_arch import build_config, mlx_name, name_map
from engine.backends.mlx.gguf_convert import convert_gguf
from engine.backends.mlx.loader import load_model, resolve_model
from engine.errors import ModelError
from engine.models.catalogue import inspect_model


@pytest.fixture(scope="module")
def converted(tmp_path_factory, smollm_gguf):
    out = tmp_path_factory.mktemp("conv") / "smol"
    assert convert_gguf(smollm_gguf, out) is True
    return out


def test_conversion_writes_a_standard_mlx_folder(converted):
    names = {p.name for p in converted.iterdir()}
    assert {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    } <= names
    cfg = json.loads((converted / "config.json").read_text())
    assert cfg["model_type"] == "llama"
    assert (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]) == (
        576,
        30,
        49152,
    )
    assert cfg["rope_traditional"] is True
    assert cfg["tie_word_embeddings"] is True
    assert cfg["max_position_embeddings"] == 8192
    tok_cfg = json.loads((converted / "tokenizer_config.json").read_text())
    assert "<|im_start|>" in tok_cfg["chat_template"]
    assert tok_cfg["eos_token"] == "<|im_end|>"
    weights = mx.load(str(converted / "model.safetensors"))
    assert weights["model.embed_tokens.weight"].shape == (49152, 576 * 8 // 32)  # 8-bit
    assert weights["model.layers.0.self_attn.q_proj.weight"].shape == (576, 576 * 4 // 32)


def test_second_conversion_is_a_no_op(converted, smollm_gguf):
    before = (converted / "model.safetensors").stat().st_mtime_ns
    assert convert_gguf(smollm_gguf, converted) is False
    assert (converted / "model.safetensors").stat().st_mtime_ns == before


def test_tokenizer_matches_known_smollm2_ids(converted):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(converted / "tokenizer.json"))
    # Digits split one by one, special tokens atomic (SmolLM2's own tokenizer).
    assert tok.encode("What is the capital of France?").ids == [
        1780,
        314,
        260,
        3575,
        282,
        4649,
        47,
    ]
    assert tok.encode("123").ids == [33, 34, 35]
    assert tok.encode("<|im_start|>user").ids == [1, 4093]


def test_tensor_names_map_to_mlx_lm_names():
    names = name_map("llama", 4)
    assert mlx_name(names, "blk.3.attn_q.weight") == "model.layers.3.self_attn.q_proj.weight"
    assert mlx_name(names, "blk.0.ffn_down.weight") == "model.layers.0.mlp.down_proj.weight"
    assert mlx_name(names, "token_embd.weight") == "model.embed_tokens.weight"
    assert mlx_name(names, "output_norm.weight") == "model.norm.weight"
    gemma = name_map("gemma3", 2)
    assert mlx_name(gemma, "blk.1.ffn_norm.weight") == (
        "model.layers.1.pre_feedforward_layernorm.weight"
    )
    assert mlx_name(gemma, "blk.1.post_ffw_norm.weight") == (
        "model.layers.1.post_feedforward_layernorm.weight"
    )
    assert mlx_name(name_map("qwen2", 1), "blk.0.attn_q.bias") == (
        "model.layers.0.self_attn.q_proj.bias"
    )
    assert mlx_name(name_map("phi3", 1), "blk.0.ffn_up.weight") == (
        "model.layers.0.mlp.gate_up_proj.weight"
    )
    with pytest.raises(ModelError, match="unknown tensor"):
        mlx_name(names, "blk.0.mystery.weight")


def test_unsupported_architecture_in_gguf_is_refused():
    meta = {"general.architecture": "mamba", "tokenizer.ggml.tokens": ["a"]}
    with pytest.raises(ModelError, match="unsupported architecture 'mamba'"):
        build_config(meta, False)


def test_repacked_weights_equal_mlx_own_gguf_reader(converted, smollm_gguf):
    """The shipped Q4_1/Q8_0 tensors, repacked by gguf_tensors, are bit for bit the
    weights MLX's own GGUF loader gives (an independent decoder of the same file)."""
    ours = mx.load(str(converted / "model.safetensors"))
    theirs = mx.load(str(smollm_gguf))
    pairs = {
        "token_embd": "model.embed_tokens",
        "blk.0.attn_q": "model.layers.0.self_attn.q_proj",
        "blk.29.ffn_down": "model.layers.29.mlp.down_proj",
    }
    for src, dst in pairs.items():
        for part in ("weight", "scales", "biases"):
            a, b = ours[f"{dst}.{part}"], theirs[f"{src}.{part}"]
            assert a.shape == b.shape and a.dtype == b.dtype, (src, part)
            assert mx.array_equal(a, b).item(), (src, part)
    assert mx.array_equal(ours["model.norm.weight"], theirs["output_norm.weight"]).item()


def test_truncated_and_non_gguf_files_are_refused(tmp_path, smollm_gguf):
    torn = tmp_path / "torn.gguf"
    with open(smollm_gguf, "rb") as f:
        torn.write_bytes(f.read(2_000_000))
    with pytest.raises(ModelError, match="past the end of the file.*truncated"):
        resolve_model(str(torn))
    text = tmp_path / "notes.gguf"
    text.write_text("hello")
    with pytest.raises(ModelError, match="not a usable GGUF file"):
        resolve_model(str(text))


def test_folder_errors(tmp_path, tiny_model_dir):
    with pytest.raises(ModelError, match="not found"):
        resolve_model(str(tmp_path / "missing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(str(empty))
    no_weights = tmp_path / "noweights"
    shutil.copytree(tiny_model_dir, no_weights)
    (no_weights / "model.safetensors").unlink()
    with pytest.raises(ModelError, match="no weights"):
        inspect_model(no_weights)
    alien = tmp_path / "alien"
    shutil.copytree(tiny_model_dir, alien)
    cfg = json.loads((alien / "config.json").read_text())
    (alien / "config.json").write_text(json.dumps({**cfg, "model_type": "flux_capacitor"}))
    with pytest.raises(ModelError, match="unsupported architecture 'flux_capacitor'"):
        load_model(alien)
    bad_json = tmp_path / "badjson"
    shutil.copytree(tiny_model_dir, bad_json)
    (bad_json / "config.json").write_text("{not json")
    with pytest.raises(ModelError, match="cannot be read as JSON"):
        inspect_model(bad_json)


def test_offline_first_start_gives_a_clear_message(tmp_path, monkeypatch):
    from engine.backends.mlx.loader import ensure_default_model

    monkeypatch.setenv("LOGITSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LOGITSCOPE_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("LOGITSCOPE_SMOLLM2_GGUF", raising=False)
    for key, value in {
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_RETRIES": "0",
        "PIP_TIMEOUT": "2",
        "PIP_CONFIG_FILE": os.devnull,
    }.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ModelError, match="could not download the default model.*network"):
        ensure_default_model()


def test_a_repo_id_opens_from_the_hugging_face_cache(tmp_path, tiny_model_dir, monkeypatch):
    """An MLX model cached by Hugging Face (as mlx_lm.load finds it offline) opens by id."""
    import shutil

    from engine.errors import ModelError

    cache = tmp_path / "hub"
    repo = cache / "models--mlx-community--tiny-test"
    snapshot = repo / "snapshots" / "0123abcd"
    shutil.copytree(tiny_model_dir, snapshot)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(cache))
    assert resolve_model("mlx-community/tiny-test") == snapshot
    lm, info, _s = load_model(resolve_model("mlx-community/tiny-test"))
    assert info.architecture == "llama" and lm.vocab_size > 0
    with pytest.raises(ModelError, match="Hugging Face cache"):
        resolve_model("mlx-community/not-cached")
    # Listed in the picker under its id, with where it comes from and its size.
    from engine.models.catalogue import list_models

    listed = {m.name: m for m in list_models()}
    assert listed["mlx-community/tiny-test"].source == "Hugging Face cache"
    assert listed["mlx-community/tiny-test"].path == str(snapshot.resolve())
    assert listed["mlx-community/tiny-test"].parameters == lm_parameters(lm)


def lm_parameters(lm) -> int:
    from mlx.utils import tree_flatten

    return sum(v.size for _k, v in tree_flatten(lm.model.parameters()))


def test_an_unreachable_hub_gives_a_clear_message(tmp_path, monkeypatch):
    """Online mode, but nothing answers: the id is neither cached nor reachable."""
    import huggingface_hub.constants as hc

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(hc, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the hub client reads this
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(
        hc,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        "http://127.0.0.1:9/{repo_id}/resolve/{revision}/{filename}",
    )
    with pytest.raises(ModelError, match="not in the Hugging Face cache.*cannot be reached"):
        resolve_model("mlx-community/nowhere-model")
