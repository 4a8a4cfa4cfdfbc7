"""lab distill-train estimates its memory before it starts (issue 57 item 3): sizes in
range that would not fit are refused in one sentence with the estimate, before any
(batch, seq, vocabulary) tensor exists; the child's peak RSS stays near a small run's."""

from __future__ import annotations

import pytest

from engine.backends.mlx.distill_train import (
    MEMORY_SHARE,
    STEP_COPIES,
    TEACHER_COPIES,
    TEACHER_WINDOWS,
    check_memory,
    training_bytes,
)
from engine.errors import SettingsError
from engine.lab import DistillTrainParams
from tests.child_memory import run_measured

VOCAB = 49_152  # SmolLM2's


def test_the_estimate_is_the_sum_of_its_tensors():
    p = DistillTrainParams(batch=256, seq=128, heldout_tokens=128)
    want = 4 * VOCAB * (STEP_COPIES * 256 * 128 + TEACHER_COPIES * TEACHER_WINDOWS * 128 + 2 * 128)
    assert training_bytes(p, VOCAB) == want
    need = want / 1e9
    with pytest.raises(SettingsError) as e:
        check_memory(p, VOCAB, 8 * 10**9)
    assert str(e.value) == (
        f"batch 256 × seq 128 needs about {need:.1f} GB (256 × 128 tokens × a 49,152-token "
        f"vocabulary × 4 bytes × {STEP_COPIES} working copies, plus the teacher's targets), "
        "but 8.0 GB of memory is available: lower --batch or --seq"
    )
    check_memory(p, VOCAB, int(want / MEMORY_SHARE) + 1)  # fits: nothing said
    check_memory(p, VOCAB, None)  # unknown memory: nothing refused
    check_memory(DistillTrainParams(), VOCAB, 2 * 10**9)  # the defaults fit in 2 GB


def test_the_command_refuses_before_allocating(default_model_path, tmp_path):
    from engine.backends.mlx.distill_train import DEFAULT_TEXT

    model = ["--model", str(default_model_path)]
    # the small run on the shipped text's first 1,000 characters (about 200 tokens: two
    # windows and the held-out part), so its teacher reads a third of the default's tokens
    text = tmp_path / "short.txt"
    text.write_text(DEFAULT_TEXT.read_text(encoding="utf-8")[:1000], encoding="utf-8")
    small = run_measured(
        ["lab", "distill-train", *model, "--steps", "1", "--no-save", "--text", str(text)]
    )
    assert small.returncode == 0, small.stderr
    big = run_measured(
        ["lab", "distill-train", *model, "--batch", "256", "--seq", "1024", "--no-save"]
    )
    lines = [ln for ln in big.stderr.splitlines() if not ln.startswith("[")]
    assert big.returncode == 2 and len(lines) == 1, big.stderr
    assert lines[0].startswith("logitscope: error: batch 256 × seq 1024 needs about ")
    assert lines[0].endswith("lower --batch or --seq") and "Traceback" not in big.stderr
    assert big.peak_rss_kb < 1.5 * small.peak_rss_kb  # refused before any big tensor
