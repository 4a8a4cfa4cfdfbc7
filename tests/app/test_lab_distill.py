"""The lab's Distillation tab on the real default model (the teacher): Compare against
its quick default, the teacher re-quantized to 3 bits (a student that differs), a tiny
student distilled live (3 steps), and a cancelled run.
What the charts and the list show must be the engine's result, number for number.
Compare and the distilled student run in one test on one Lab window: each Lab window
starts an engine process of its own that loads the model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from app.lab.distill_compare_view import nats
from engine.lab import DistillTrainParams

TEXT = "The keeper climbed the spiral stairs every evening to light the lamp."
# Tiny: the teacher reads ~60 tokens once; each step is a few milliseconds.
TINY = DistillTrainParams(seq=8, batch=2, heldout_tokens=16, train_tokens=48, eval_every=1)
RUN_MS = 120_000


def _lab(qtbot, window):
    lab = window.open_lab()
    qtbot.addWidget(lab)
    view = lab.show_tab("distill")
    assert lab.current_kind() == "distill" and view is lab.distill
    return lab, view


def _done(qtbot, lab):
    got = []
    lab.bridge.lab_done.connect(got.append)
    return got, lambda: qtbot.waitUntil(lambda: bool(got) and not lab.bridge.busy, timeout=RUN_MS)


def test_compare_then_distil_a_tiny_student_then_cancel(qtbot, window, tmp_path):
    lab, view = _lab(qtbot, window)
    _compare_teacher_with_its_quick_student(qtbot, window, lab, view)
    _distil_a_tiny_student_then_cancel(qtbot, window, lab, view, tmp_path)
    lab.close()


def _compare_teacher_with_its_quick_student(qtbot, window, lab, view):
    part = view.compare
    assert part.student.currentData() == (window.model_record.path, 3)  # the quick default
    assert part.student.itemData(1) == window.model_record.path  # as stored, offered next
    part.text.setPlainText(TEXT)
    got, wait = _done(qtbot, lab)
    part.run.click()
    wait()
    r = got[0].result
    assert view.result is r and r.same_tokenizer and len(r.kl) == len(r.labels) > 5
    assert r.mean_kl > 0.05 and r.agreement < 1  # a student that differs, not the teacher
    xs, ys = part.kl_curve.getData()
    assert list(xs) == list(range(len(r.kl))) and list(ys) == pytest.approx(r.kl, abs=0)
    assert np.mean(ys) == pytest.approx(r.mean_kl)
    text = part.summary.text()
    assert f"Mean KL(teacher ‖ student) {nats(r.mean_kl)} nats/token" in text
    for number in (f"{r.agreement:.1%}", f"{r.teacher_ce:.4f}"):
        assert number in text
    assert f"{r.student_ce:.4f}" in text
    assert part.most.count() == len(r.most)
    first = r.most[0]
    assert part.most.item(0).text().startswith(f"{r.labels[first]!r}  KL {nats(r.kl[first])}")
    part.most.setCurrentRow(1)  # the second disagreement: both distributions there
    i = r.most[1]
    assert part.mark.value() == i
    for bars, who in ((part.teacher_bars, "teacher"), (part.student_bars, "student")):
        pairs = r.top[who][str(i)][:8]
        assert bars.probs == [p for _t, p in pairs]
        assert bars.labels == [r.token_labels[who][str(t)] for t, _p in pairs]
    assert lab.status.text().startswith("Done")


def _distil_a_tiny_student_then_cancel(qtbot, window, lab, view, tmp_path):
    part = view.train
    assert (part.steps.value(), part.width_box.value()) == (60, 64)  # DistillTrainParams'
    text = tmp_path / "text.txt"
    text.write_text(" ".join([TEXT] * 6), encoding="utf-8")
    part.use_file(str(text))
    part.base = replace(TINY, save=False)
    part.steps.setValue(3)
    part.width_box.setValue(32)
    part.layers.setValue(1)
    steps, (got, wait) = [], _done(qtbot, lab)
    lab.bridge.lab_step.connect(steps.append)
    part.start.click()
    assert part.cancel.isEnabled() and not part.start.isEnabled()
    wait()
    r = got[0].result
    assert view.train_result is r and r.steps_done == 3 and not r.cancelled
    assert r.settings["width"] == 32 and r.settings["layers"] == 1 and r.settings["steps"] == 3
    assert [s.step for s in steps] == [0, 1, 2, 3]  # live, one record per step
    assert [s.data["soft_loss"] for s in steps[1:]] == list(r.soft_loss)
    xs, ys = part.loss.soft.getData()
    assert list(xs) == [1, 2, 3] and list(ys) == list(r.soft_loss)
    assert list(part.loss.hard.getData()[1]) == list(r.hard_loss)
    xs, ys = part.kl.soft.getData()
    assert list(xs) == list(r.eval_steps) == [0, 1, 2, 3]
    assert list(ys) == list(r.heldout_kl_soft)
    assert list(part.kl.hard.getData()[1]) == list(r.heldout_kl_hard)
    assert part.sentence.text().startswith(r.sentence)
    assert f"{r.heldout_kl_soft[-1]:.2f}" in r.sentence and "after 3 steps" in r.sentence.lower()
    assert not part.open.isEnabled()  # nothing saved: nothing to open
    # A saved student opens in the playground (the shell's wiring, then the signal).
    view.open_student.disconnect(window.load_model)
    part.show_result(replace(r, saved={"soft": "/m/soft", "hard": "/m/hard"}))
    with qtbot.waitSignal(view.open_student, timeout=1000) as opened:
        part.open.click()
    assert opened.args == ["/m/soft"]

    # Cancel: a long run stops between steps, keeping what it did.
    part.steps.setValue(100_000)
    steps.clear()
    got.clear()
    part.start.click()
    qtbot.waitUntil(lambda: part.steps_seen >= 2, timeout=RUN_MS)
    part.cancel.click()
    wait()
    r = got[0].result
    assert r.cancelled and 2 <= r.steps_done < 100_000 and r.saved == {}
    assert len(part.loss.soft.getData()[0]) == r.steps_done
    assert "cancelled after" in part.sentence.text().lower()
    assert part.start.isEnabled() and not part.cancel.isEnabled()


def test_across_tokenizers_shows_words_and_why(qtbot):
    """Two tokenizers: per-word surprisal of each (a word one side lacks is a gap), bits
    per byte, and the engine's sentence on why KL is not defined (no model needed)."""
    from app.lab.distill_compare_view import DistillCompareView
    from engine.lab import DistillResult

    r = DistillResult(
        teacher="A",
        student="B",
        same_tokenizer=False,
        why="Two tokenizers: KL is not defined per token.",
        labels=("The", " keeper", " climbed"),
        teacher_bits=(3.5, 9.25, None),
        student_bits=(4.0, 12.5, 7.0),
        teacher_bits_per_byte=1.25,
        student_bits_per_byte=1.5,
        text_bytes=18,
        most=(1, 0),
        top={"teacher": {"1": [(7, 0.5), (8, 0.25)]}, "student": {}},
        token_labels={"teacher": {"7": " keeper", "8": " man"}, "student": {}},
    )
    view = DistillCompareView()
    qtbot.addWidget(view)
    view.show_result(r)
    ys = view.kl_curve.getData()[1]
    assert list(ys[:2]) == [3.5, 9.25] and np.isnan(ys[2])
    assert list(view.student_curve.getData()[1]) == [4.0, 12.5, 7.0]
    assert "1.250 bits per byte" in view.summary.text() and r.why in view.summary.text()
    assert view.most.item(0).text() == "' keeper' · teacher 9.25 bits · student 12.50 bits"
    assert view.teacher_bars.probs == [0.5, 0.25] and view.teacher_bars.labels == [
        " keeper",
        " man",
    ]
    assert view.student_bars.probs == []
