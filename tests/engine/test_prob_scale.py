"""The one probability scale (heat or cividis), in the HTML export too, and files
written with the user's usual permissions."""

from __future__ import annotations

import os
import stat
from types import SimpleNamespace

from engine.display.prob_scale import SCALES, contrast_ratio, gradient_stops, prob_rgb, text_rgb
from engine.run.records import TokenRecord
from engine.sessions.export_html import token_spans
from engine.store.atomic import write_atomic


def _token(step: int, prob: float) -> TokenRecord:
    return TokenRecord(
        step=step, token_id=step, text="x", logprob=None, prob=prob, sampled_logprob=None,
        top=(), sampled_top=(), entropy=None, sampled_entropy=None, elapsed_s=0.0,
        latency_s=0.0, context_tokens=step,
    )  # fmt: skip


def test_scales_end_where_they_say():
    assert prob_rgb(0.0, "cividis") == (0, 32, 77)
    assert prob_rgb(1.0, "cividis") == (255, 234, 70)
    assert prob_rgb(0.5, "heat") == (255, 235, 132)
    assert prob_rgb(None, "cividis") == (238, 238, 238)
    assert prob_rgb(0.3, "no such scale") == prob_rgb(0.3, "heat")
    assert gradient_stops("cividis")[0] == (0.0, "#00204d")


def test_text_colour_is_white_on_dark_and_black_on_light():
    assert text_rgb((0, 32, 77)) == (255, 255, 255)
    assert text_rgb((255, 234, 70)) == (0, 0, 0)
    assert round(contrast_ratio((0, 0, 0), (255, 255, 255)), 2) == 21.0


def test_html_export_uses_the_chosen_scale_with_readable_text():
    run = SimpleNamespace(tokens=[_token(0, 0.0), _token(1, 1.0)])
    heat, cividis = token_spans(run), token_spans(run, "cividis")
    assert "background:#f8696b;color:#000000" in heat
    assert "background:#00204d;color:#ffffff" in cividis
    assert "background:#ffea46;color:#000000" in cividis
    assert len(SCALES) == 2


def test_written_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_atomic(tmp_path / "export.html", "<p>hi</p>")
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        os.umask(0o077)
        private = write_atomic(tmp_path / "private.json", "{}")
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
        path.chmod(0o640)  # a replaced file keeps the mode its owner gave it
        write_atomic(path, "<p>again</p>")
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
    finally:
        os.umask(old)
