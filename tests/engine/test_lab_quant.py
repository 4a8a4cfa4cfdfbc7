"""Quantization A/B on the real default model: the reference against itself is
exact, and per-token KL, top-1 agreement and Δlogprob equal an independent NumPy
computation from both models' logits."""

from __future__ import annotations

import subprocess
import sys

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

from engine.backends.mlx.lab_quant import run_quant_lab
from engine.models.default_model import DEFAULT_MODEL_NAME

COPY_BITS = 3  # the installed copy: SmolLM2 re-quantized to 3 bits by mlx-lm
COPY_NAME = "SmolLM2-135M-Instruct-3bit"


def make_quantized_copy(src, out, bits: int):
    """Install `src` re-quantized to `bits` (group 64) with mlx-lm's own quantize."""
    import shutil

    from mlx_lm.utils import load_config, quantize_model, save_config, save_model

    from engine.backends.mlx.loader import load_model

    model = load_model(src, prefer="speed")[0].model  # float32, dequantized
    drop = ("logitscope_source", "quantization", "quantization_config")  # of the source
    config = {k: v for k, v in load_config(src).items() if k not in drop}
    model, config = quantize_model(model, config, group_size=64, bits=bits)
    out.mkdir(parents=True)
    save_model(out, model)
    save_config(config, out / "config.json")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / name, out / name)
    return out


@pytest.fixture(scope="module")
def models_with_copy(default_model_path, tmp_path_factory):
    """A models folder holding the default model and a 3-bit copy of it."""
    folder = tmp_path_factory.mktemp("models")
    (folder / default_model_path.name).symlink_to(default_model_path)
    make_quantized_copy(default_model_path, folder / COPY_NAME, COPY_BITS)
    return folder


@pytest.fixture(scope="module")
def lab(default_model_path, smollm, models_with_copy):
    from engine.backends.mlx.lab_runs import installed_variants
    from engine.backends.mlx.loader import load_model
    from engine.models.catalogue import inspect_model

    def load_reference():
        return load_model(default_model_path, prefer="speed")[0].model

    def load_installed():  # the shipped 4-bit weights, as mlx-lm runs them
        return load_model(default_model_path)[0].model

    ids = smollm.tokenizer.encode("Paris is the capital of")
    info = inspect_model(default_model_path)
    with pytest.MonkeyPatch.context() as mp:  # the catalogue lists this folder, only here
        mp.setenv("LOGITSCOPE_MODELS_DIR", str(models_with_copy))
        installed = installed_variants(default_model_path, info, smollm.vocab_size, True)
    answer, variants = run_quant_lab(
        load_reference,
        ids,
        set(smollm.tokenizer.eos_token_ids),
        bits=(8, 3),
        answer_tokens=6,
        installed=installed,
    )
    return load_reference, ids, answer, variants, load_installed


def _log_softmax64(logits) -> np.ndarray:
    x = np.array(logits.astype(mx.float32), dtype=np.float64)
    x -= x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_reference_against_itself_is_zero(lab):
    _load, _ids, answer, variants, _installed = lab
    ref = variants[0]
    assert ref.bits is None and ref.name == "float32 reference"
    assert ref.kl == [0.0] * len(answer) and all(ref.agree)
    assert ref.delta_logprob == [0.0] * len(answer)


def test_variant_numbers_equal_numpy(lab):
    load, ids, answer, variants, load_installed = lab
    ref_model, q3 = load(), load()
    nn.quantize(q3, group_size=64, bits=3)
    seq = ids + answer
    ref_lp = _log_softmax64(ref_model(mx.array(seq[:-1])[None])[0])[len(ids) - 1 :]
    var_lp = _log_softmax64(q3(mx.array(seq[:-1])[None])[0])[len(ids) - 1 :]
    v = next(x for x in variants if x.bits == 3)
    check_against_numpy(v, ref_lp, var_lp, answer)
    eight = next(x for x in variants if x.bits == 8)
    assert eight.mean_kl < v.mean_kl  # fewer bits, more damage
    assert eight.weight_bytes > v.weight_bytes
    # The installed 4-bit weights, measured as they are (not re-quantized).
    stored = next(x for x in variants if x.key == "installed:" + DEFAULT_MODEL_NAME)
    assert stored.bits is None
    stored_lp = _log_softmax64(load_installed()(mx.array(seq[:-1])[None])[0])[len(ids) - 1 :]
    check_against_numpy(stored, ref_lp, stored_lp, answer, tol=5e-3)  # float16 activations
    assert 0 < stored.mean_kl < v.mean_kl  # measured, not the reference's own numbers


def test_installed_copy_is_measured(lab, models_with_copy):
    """A 3-bit copy installed beside the model scores as the 3-bit re-quantized row
    (the same weights), and as NumPy computes from its own logits."""
    from mlx_lm import load

    _load, ids, answer, variants, _stored = lab
    copy = next(x for x in variants if x.key == f"installed:{COPY_NAME}")
    three = next(x for x in variants if x.bits == COPY_BITS)
    assert copy.name.endswith("3-bit (group 64)), float32 scales, as installed")
    assert copy.mean_kl > 0.05 and copy.agreement < 1.0  # not the reference's numbers
    assert copy.kl == pytest.approx(three.kl, rel=1e-4, abs=1e-6)
    assert copy.agree == three.agree
    assert copy.perplexity == pytest.approx(three.perplexity, rel=1e-4)
    assert copy.weight_bytes == three.weight_bytes
    seq = ids + answer
    bare, _tok = load(str(models_with_copy / COPY_NAME))  # bare mlx-lm, no Logitscope code
    copy_lp = _log_softmax64(bare(mx.array(seq[:-1])[None])[0])[len(ids) - 1 :]
    ref_lp = _log_softmax64(_load()(mx.array(seq[:-1])[None])[0])[len(ids) - 1 :]
    check_against_numpy(copy, ref_lp, copy_lp, answer)


def check_against_numpy(v, ref_lp, var_lp, answer, tol=1e-3):
    for i, tok in enumerate(answer):
        p = np.exp(ref_lp[i])
        kl = float(np.sum(p * (ref_lp[i] - var_lp[i])))
        assert v.kl[i] == pytest.approx(kl, rel=1e-3, abs=tol / 10)  # float32 logits
        assert v.agree[i] == (ref_lp[i].argmax() == var_lp[i].argmax())
        assert v.delta_logprob[i] == pytest.approx(var_lp[i][tok] - ref_lp[i][tok], abs=tol)
    chosen = var_lp[np.arange(len(answer)), answer]
    assert v.perplexity == pytest.approx(float(np.exp(-chosen.mean())), rel=1e-3)


def test_cli_lab_quant_refuses_bad_bits():
    """The command line's JSON is checked against the engine process in test_lab_paths."""
    bad = subprocess.run(
        [sys.executable, "-m", "engine", "lab", "quant", "--prompt", "Hi", "--bits", "7"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "not [7]" in bad.stderr
