"""Distilling a student here is real training: the loss falls, both runs see the same
batches from the same initial weights, a cancel stops it, and the saved student loads in
a fresh process with the engine's loader and gives the logits it had at the end."""

from __future__ import annotations

import json
import subprocess
import sys

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten

from engine.backends.mlx.distill_train import batch_order, train_students
from engine.lab import DistillTrainParams
from engine.lab.reporter import LabReporter

HELD = "The river carried sand down to the sea."
TINY = dict(steps=12, width=32, seq=16, batch=4, heldout_tokens=48, eval_every=4, top_k=16)

FRESH = """
import json, sys
import mlx.core as mx
from pathlib import Path
from engine.backends.mlx.loader import load_model
lm = load_model(Path(sys.argv[1]))[0]
ids = lm.tokenizer.encode(sys.argv[2], add_special_tokens=False)
print(json.dumps(lm.model(mx.array(ids)[None])[0].astype(mx.float32).tolist()))
"""


def test_tiny_teacher_trains_saves_and_reloads(tiny_lm, tiny_model_dir, tmp_path):
    steps = []
    text = (tiny_model_dir / "config.json").read_text() * 3  # any text: bytes for the tiny model
    params = DistillTrainParams(text=text, **TINY)
    result, models = train_students(
        tiny_lm, tiny_model_dir, params, LabReporter(None, steps.append), tmp_path
    )
    assert result.steps_done == 12 and not result.cancelled
    assert np.mean(result.soft_loss[-3:]) < np.mean(result.soft_loss[:3])
    assert np.mean(result.hard_loss[-3:]) < np.mean(result.hard_loss[:3])
    assert result.same_batches
    assert result.eval_steps == (0, 4, 8, 12)
    assert result.heldout_kl_soft[0] == result.heldout_kl_hard[0]  # one initial student
    assert [s.step for s in steps] == list(range(13))
    assert steps[4].data["heldout_kl_soft"] == result.heldout_kl_soft[1]
    folder = result.saved["soft"]
    config = json.loads((tmp_path / folder / "config.json").read_text())
    assert config["model_type"] == "llama" and config["hidden_size"] == 32
    assert config["logitscope_distilled"]["tau"] == 2.0
    ids = tiny_lm.tokenizer.encode(HELD, add_special_tokens=False)
    mine = np.array(models["soft"](mx.array(ids)[None])[0])
    done = subprocess.run(
        [sys.executable, "-c", FRESH, folder, HELD], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.array(json.loads(done.stdout)), mine, atol=1e-5)


def test_same_init_and_data_order(tiny_lm, tiny_model_dir):
    """Both students start from identical weights and see identical windows; a cancel
    before step 3 stops with two steps done and nothing saved."""
    from engine.backends.mlx.distill_student import build_student, student_config

    config = student_config(tiny_model_dir, tiny_lm.vocab_size, 32, 2)
    a = build_student(config, tiny_lm.model, "projected", 7)
    b = build_student(config, tiny_lm.model, "projected", 7)
    for (ka, va), (kb, vb) in zip(
        tree_flatten(a.parameters()), tree_flatten(b.parameters()), strict=True
    ):
        assert ka == kb and mx.array_equal(va, vb)
    order = batch_order(10, 4, 6, seed=3)
    assert [o.tolist() for o in order] == [o.tolist() for o in batch_order(10, 4, 6, seed=3)]
    assert sorted(np.concatenate(order).tolist()[:10]) == list(range(10))  # one epoch
    calls = iter(range(100))
    stop = LabReporter(None, None, lambda: next(calls) >= 2)
    text = (tiny_model_dir / "tokenizer_config.json").read_text() * 4
    result, _m = train_students(
        tiny_lm, tiny_model_dir, DistillTrainParams(text=text, **TINY), stop, None
    )
    assert result.cancelled and result.steps_done == 2 and result.saved == {}
    assert len(result.soft_loss) == len(result.hard_loss) == 2 and result.same_batches


def test_real_teacher_short_run(smollm, default_model_path):
    """SmolLM2 as the teacher, three steps: soft targets over its 49k vocabulary."""
    text = "Trees grow by adding a new layer of wood under their bark every year. " * 3
    params = DistillTrainParams(
        text=text, steps=3, width=32, seq=8, batch=2, heldout_tokens=12, eval_every=3, save=False
    )
    result, models = train_students(smollm, default_model_path, params, None, None)
    assert result.steps_done == 3 and result.same_batches and result.saved == {}
    assert result.heldout_kl_soft[-1] < result.heldout_kl_soft[0]
    assert result.soft_loss[-1] < result.soft_loss[0]
    assert models["soft"].args.vocab_size == smollm.vocab_size == 49152
