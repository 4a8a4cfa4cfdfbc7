"""A second float32 copy of the same weights, in the same process, holds the first
copy's arrays instead of dequantizing again; it answers exactly as a fresh
dequantization does, and changing one copy (re-quantizing it) leaves the other as it
was. Another model, or the same file rewritten, is never served the kept arrays."""

from __future__ import annotations

import json
import os
import shutil

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx.utils import tree_flatten

from engine.backends.mlx import float32_weights
from engine.backends.mlx.loader import load_model

IDS = mx.array([[3, 17, 40, 2, 9, 33]])


@pytest.fixture
def quantized_tiny(tmp_path, tiny_model_dir, monkeypatch):
    """The tiny llama, 4-bit (group size 32), saved as mlx-lm saves a quantized model;
    copies kept on disk go to a runtime folder of the test's own."""
    monkeypatch.setenv("LOGITSCOPE_RUNTIME_DIR", str(tmp_path / "runtime"))
    folder = tmp_path / "tiny-q4"
    shutil.copytree(tiny_model_dir, folder)
    lm, _info, _s = load_model(folder)
    nn.quantize(lm.model, group_size=32, bits=4)
    mx.save_safetensors(
        str(folder / "model.safetensors"), dict(tree_flatten(lm.model.parameters()))
    )
    config = json.loads((folder / "config.json").read_text())
    config["quantization"] = {"group_size": 32, "bits": 4}
    (folder / "config.json").write_text(json.dumps(config))
    float32_weights.release_other(None)
    yield folder
    float32_weights.release_other(None)


def _logits(lm) -> np.ndarray:
    out = lm.model(IDS)
    mx.eval(out)
    return np.array(out)


def _arrays(lm) -> dict:
    return dict(tree_flatten(lm.model.parameters()))


def test_a_second_copy_shares_the_first_ones_arrays_and_answers_as_a_fresh_one(quantized_tiny):
    first, _i, _s = load_model(quantized_tiny, prefer="speed")
    second, _i, _s = load_model(quantized_tiny, prefer="speed")
    a, b = _arrays(first), _arrays(second)
    assert a.keys() == b.keys() and all(a[k] is b[k] for k in a)  # held, not recomputed
    assert all(v.dtype == mx.float32 for v in b.values())
    float32_weights.release_other(None)
    fresh, _i, _s = load_model(quantized_tiny, prefer="speed")  # dequantized again
    assert not any(_arrays(fresh)[k] is a[k] for k in a)
    np.testing.assert_array_equal(_logits(second), _logits(fresh))


def test_re_quantizing_one_copy_leaves_the_other_as_it_was(quantized_tiny):
    first, _i, _s = load_model(quantized_tiny, prefer="speed")
    before = _logits(first)
    second, _i, _s = load_model(quantized_tiny, prefer="speed")
    nn.quantize(second.model, group_size=32, bits=2)  # what the Lab does to a variant
    assert not np.array_equal(_logits(second), before)
    np.testing.assert_array_equal(_logits(first), before)
    third, _i, _s = load_model(quantized_tiny, prefer="speed")
    np.testing.assert_array_equal(_logits(third), before)


def test_another_model_or_a_rewritten_file_is_dequantized_afresh(quantized_tiny, tmp_path):
    first, _i, _s = load_model(quantized_tiny, prefer="speed")
    kept = _arrays(first)
    other = tmp_path / "other"
    shutil.copytree(quantized_tiny, other)  # same bytes, another folder
    copy, _i, _s = load_model(other, prefer="speed")
    assert not any(_arrays(copy)[k] is kept[k] for k in kept)
    weights = quantized_tiny / "model.safetensors"
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # rewritten
    again, _i, _s = load_model(quantized_tiny, prefer="speed")
    assert not any(_arrays(again)[k] is kept[k] for k in kept)
    assert float32_weights._KEPT  # the rewritten file's copy, kept
    stored, _i, _s = load_model(other)  # another model as stored: its memory is freed
    assert float32_weights._KEPT == {}
    load_model(quantized_tiny, prefer="speed")
    assert float32_weights._KEPT
    same, _i, _s = load_model(quantized_tiny, prefer="memory")  # this one, as stored
    assert float32_weights._KEPT == {} and same.compute.startswith("as stored")
    assert stored.model.layers[0].self_attn.q_proj.weight.dtype == mx.uint32


def _dequantized_twice(folder):
    """Load `folder` as a new process would, twice: the second writes the disk copy."""
    load_model(folder, prefer="speed")
    float32_weights.release_other(None)
    lm, _i, _s = load_model(folder, prefer="speed")
    return lm


def test_an_engine_started_later_reads_the_copy_kept_on_disk(quantized_tiny):
    from engine.backends.mlx import float32_file

    key = float32_weights.weights_key(quantized_tiny)
    path = float32_file.path_for(key)
    load_model(quantized_tiny, prefer="speed")
    assert not path.exists() and path.with_suffix(".seen").exists()  # once: a mark only
    float32_weights.release_other(None)
    first, _i, _s = load_model(quantized_tiny, prefer="speed")
    expected = _logits(first)
    assert path.is_file()  # written by the second dequantization
    kept = mx.load(str(path))
    for name, array in _arrays(first).items():  # bit for bit what was dequantized
        np.testing.assert_array_equal(np.array(kept[name]), np.array(array))
    # What a new process does: nothing kept in memory. The copy on disk is what it reads:
    # a marked copy (every weight doubled) shows in its logits.
    float32_weights.release_other(None)
    mx.save_safetensors(str(path), {k: v * 2 for k, v in kept.items()})
    marked, _i, _s = load_model(quantized_tiny, prefer="speed")
    np.testing.assert_array_equal(
        np.array(marked.model.layers[0].mlp.up_proj.weight),
        2 * np.array(first.model.layers[0].mlp.up_proj.weight),
    )
    # The true copy back: a later engine answers exactly as the first one.
    mx.save_safetensors(str(path), dict(kept))
    float32_weights.release_other(None)
    later, _i, _s = load_model(quantized_tiny, prefer="speed")
    np.testing.assert_array_equal(_logits(later), expected)


@pytest.mark.parametrize("damage", ["truncated", "other_shapes", "not_safetensors"])
def test_a_damaged_copy_on_disk_is_deleted_and_the_model_dequantized(quantized_tiny, damage):
    from engine.backends.mlx import float32_file

    first = _dequantized_twice(quantized_tiny)
    expected = _logits(first)
    path = float32_file.path_for(float32_weights.weights_key(quantized_tiny))
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "other_shapes":
        mx.save_safetensors(str(path), {k: v[:1] for k, v in _arrays(first).items()})
    else:
        path.write_text("not a safetensors file")
    float32_weights.release_other(None)
    again, _i, _s = load_model(quantized_tiny, prefer="speed")
    np.testing.assert_array_equal(_logits(again), expected)
    kept = mx.load(str(path))  # written afresh by the dequantization
    assert kept.keys() == _arrays(first).keys()


def test_copies_on_disk_are_bounded(quantized_tiny, tmp_path, monkeypatch):
    from engine.backends.mlx import float32_file

    folders = []
    for i in range(float32_file.KEEP + 2):
        folder = tmp_path / f"copy{i}"
        shutil.copytree(quantized_tiny, folder)
        _dequantized_twice(folder)
        folders.append(folder)
    kept = sorted(p.name for p in float32_file.folder().glob("*.safetensors"))
    recent = [float32_file.path_for(float32_weights.weights_key(f)).name for f in folders]
    assert kept == sorted(recent[-float32_file.KEEP :])  # the most recently used
    monkeypatch.setattr(float32_file, "MAX_BYTES", 1000)  # a model too large for a copy
    float32_weights.release_other(None)
    big = tmp_path / "big"
    shutil.copytree(quantized_tiny, big)
    _dequantized_twice(big)
    assert not float32_file.path_for(float32_weights.weights_key(big)).exists()
