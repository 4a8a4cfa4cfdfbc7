"""Load options: the KV cache's precision and the context length, remembered per model.
KV bytes are exactly layers x 2 x kv_heads x head_dim x tokens x element bytes (with a
quantized cache's scales and biases); an 8-bit KV cache stays close to float."""

from __future__ import annotations

import pytest

from engine.backends.mlx.generate import generate_records
from engine.backends.mlx.prompt_reuse import forget
from engine.errors import SettingsError
from engine.models import model_prefs
from engine.models.load_options import LoadOptions, effective_context, kv_bytes_per_token
from engine.run.settings import SamplingSettings

PROMPT = "Why do ships float? Explain briefly."
GREEDY = SamplingSettings(temperature=0, max_tokens=5, seed=0, prompt_cache=False)


def _done(lm, prompt=PROMPT, settings=GREEDY):
    return [r for r in generate_records(lm, prompt, settings) if r.type == "done"][0]


@pytest.mark.parametrize("bits", [None, 8, 4])
def test_kv_bytes_are_exact(smollm, bits):
    saved = smollm.kv_bits
    smollm.kv_bits = bits
    forget(smollm)
    try:
        done = _done(smollm)
    finally:
        smollm.kv_bits = saved
        forget(smollm)
    # SmolLM2-135M: 30 layers, 3 KV heads of 64; float32 here (the speed path)
    per_token = {None: 30 * 2 * 3 * 64 * 4, 8: 30 * 2 * 3 * (16 * 4 + 2 * 4), 4: 30 * 2 * 3 * 40}
    assert kv_bytes_per_token(30, 3, 64, bits, float_bytes=4) == per_token[bits]
    assert done.kv_cache_bytes == per_token[bits] * done.kv_cache_tokens
    assert done.kv_cache_tokens == done.prompt_tokens + 4  # the last token is not fed back


def test_8bit_kv_is_close_to_float_and_4bit_further(smollm):
    from engine.backends.mlx.lab_kv import kv_precision_experiment

    rows = kv_precision_experiment(smollm, PROMPT, tokens=8, bits=(8, 4))
    full, q8, q4 = rows
    assert [r["kv_bits"] for r in rows] == [None, 8, 4]
    assert full["mean_kl"] == 0.0 and len(q8["kl"]) == 8
    assert q8["mean_kl"] < 5e-3 and q8["max_kl"] < 2e-2 and q8["same_tokens"]
    assert q4["mean_kl"] > q8["mean_kl"]
    assert q8["bytes_per_token"] == 30 * 2 * 3 * 72 and full["bytes_per_token"] == 46080
    assert smollm.kv_bits is None  # restored


def test_capped_context_refuses_a_longer_prompt(smollm, default_model_path):
    from engine.backends.mlx.loader import apply_load_options
    from engine.errors import LogitscopeError
    from engine.models.catalogue import inspect_model

    info = inspect_model(default_model_path)
    apply_load_options(smollm, info, LoadOptions(context_length=64))
    try:
        assert smollm.context_length == 64
        with pytest.raises(LogitscopeError, match="64"):
            _done(smollm, "word " * 80)
        done = _done(smollm, PROMPT, GREEDY.with_(max_tokens=200))
        assert done.prompt_tokens + done.generated_tokens <= 64
    finally:
        apply_load_options(smollm, info, LoadOptions())
    assert smollm.context_length == 8192


def test_rotating_cache_holds_at_most_its_size(smollm, default_model_path):
    from engine.backends.mlx.loader import apply_load_options
    from engine.models.catalogue import inspect_model

    info = inspect_model(default_model_path)
    apply_load_options(smollm, info, LoadOptions(context_length=64, context_mode="rotating"))
    raw = GREEDY.with_(max_tokens=56, chat_template=False)
    try:
        assert (smollm.max_kv_size, smollm.context_length) == (64, 8192)
        done = _done(smollm, "Once upon a time, in a small village by the sea,", raw)
        assert done.prompt_tokens + done.generated_tokens > 64
        assert done.kv_cache_bytes == 64 * kv_bytes_per_token(30, 3, 64, None, float_bytes=4)
    finally:
        apply_load_options(smollm, info, LoadOptions())


def test_options_validate_and_are_remembered_per_model(default_model_path):
    with pytest.raises(SettingsError, match="rotating KV cache cannot be quantized"):
        LoadOptions(context_length=512, kv_bits=8, context_mode="rotating")
    with pytest.raises(SettingsError, match="8 or 4"):
        LoadOptions(kv_bits=3)
    with pytest.raises(SettingsError, match="at least 64"):
        LoadOptions(context_length=10)
    opts = LoadOptions(context_length=2048, kv_bits=8)
    assert effective_context(opts, 8192) == 2048 and effective_context(opts, 1024) == 1024
    model_prefs.set_load_options(str(default_model_path), opts)
    assert model_prefs.load_options(str(default_model_path)) == opts
    assert model_prefs.load_options("another/model") == LoadOptions()
    model_prefs.set_load_options(str(default_model_path), LoadOptions())
    assert model_prefs.load_options(str(default_model_path)) == LoadOptions()
    model_prefs.save_sampling_preset("precise", {"temperature": 0.2, "top_p": 0.9})
    assert model_prefs.sampling_presets()["precise"] == {"temperature": 0.2, "top_p": 0.9}


def test_engine_loads_with_the_remembered_options(default_model_path):
    from engine.backends.mlx.backend import MLXBackend

    spec = str(default_model_path)
    model_prefs.set_load_options(spec, LoadOptions(context_length=1024, kv_bits=8))
    backend = MLXBackend()
    try:
        record = backend.load(spec, lambda *_: None)
        assert (record.context_length, record.kv_bits) == (1024, 8)
        assert record.load_options == "context 1,024 (capped) · KV 8-bit"
        done = _done(backend.lm)
        per_token = kv_bytes_per_token(30, 3, 64, 8, float_bytes=4)
        assert (done.context_length, done.kv_cache_bytes) == (
            1024,
            per_token * done.kv_cache_tokens,
        )
        model_prefs.set_load_options(spec, LoadOptions())
        assert backend.load(spec, lambda *_: None).context_length == 8192  # not reloaded
        assert backend.lm.kv_bits is None
    finally:
        model_prefs.set_load_options(spec, LoadOptions())
        backend.close()


def test_the_lab_cache_experiment_takes_kv_bits():
    from engine.lab import params_from

    assert params_from("cache", {"turns": 0, "kv_bits": [8, 4]}).kv_bits == (8, 4)
    with pytest.raises(SettingsError, match="8 or 4"):
        params_from("cache", {"kv_bits": [3]})
