"""History's rows: a session's Tokens are tokens (not its count of runs), a branch run
is marked (with a glyph the app's font has), and a model is named as the picker names
it."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication

from app.history.tree import BRANCH_MARK, FAILED_MARK, run_item, session_item
from engine.run.records import ModelRecord, TokenRecord, to_dict
from engine.sessions.session_log import RunLog, SessionLog


def tok(step, tid):
    return to_dict(
        TokenRecord(step, tid, f"t{tid}", -0.69, 0.5, -0.69, (), (), 1.0, 1.0, 0.0, 0.0, 10 + step)
    )


def test_history_rows_count_tokens_mark_branches_and_name_models(qtbot, tmp_path):
    folder = tmp_path / "gemma-3-270m-q4_k_m-a5fd3b6223"
    folder.mkdir()
    source = {"name": "Gemma 3 270m", "file_type": "Q4_K_M"}
    (folder / "config.json").write_text(json.dumps({"logitscope_source": source}))
    model = to_dict(
        ModelRecord(
            folder.name, str(folder), "gemma3", "GGUF Q4_K_M → MLX", 10**8, 32768, "cpu", 0.1
        )
    )
    root = RunLog("s/1", "s", 0.0, "Q", {}, model=model, records=[tok(i, i) for i in range(5)])
    branch = {"parent": "s/1", "step": 2, "kind": "forced"}
    child = RunLog("s/2", "s", 1.0, "Q", {}, model=model, records=[tok(0, 0)], branch=branch)
    session = SessionLog("s", Path("s.jsonl"), 0.0, runs=[root, child])
    top = session_item("a session", session)
    assert top.text(2) == "6"  # 5 + 1 tokens, not "2" runs
    assert "2 runs" in top.toolTip(0)
    first, second = run_item(session, root), run_item(session, child)
    assert first.text(1) == second.text(1) == "Gemma 3 270M · Q4_K_M"
    assert folder.name in first.toolTip(1)  # the full name stays in the tooltip
    assert BRANCH_MARK not in first.text(0) and f"{BRANCH_MARK}Q" in second.text(0)
    assert "branch of run s/1 at step 2 (a chosen token)" in second.toolTip(0)


def test_the_rows_marks_are_in_the_apps_font(qtbot):
    """A mark the font lacks is drawn as an empty box ('⑂' was, in DejaVu Sans)."""
    font = QFontMetrics(QApplication.font())
    for mark in (BRANCH_MARK, FAILED_MARK):
        missing = [c for c in mark if not c.isascii() and not font.inFontUcs4(ord(c))]
        assert missing == [], f"{QApplication.font().family()} lacks {missing}"


def test_a_sessions_name_leads_with_its_title_and_says_the_day_only_when_not_today():
    import time
    from pathlib import Path

    from app.history.tree import session_name
    from engine.sessions.session_log import SessionLog

    noon = time.mktime((2026, 12, 7, 12, 0, 0, 0, 0, -1))
    tour = SessionLog("s1", Path("s1.jsonl"), noon - 3600, title="Tour")
    assert session_name(tour, now=noon) == "Tour · 11:00 · no runs yet"
    mine = SessionLog("s2", Path("s2.jsonl"), noon - 86400)
    assert session_name(mine, now=noon) == "6 Dec 12:00 · no runs yet"
    old = SessionLog("s3", Path("s3.jsonl"), time.mktime((2025, 3, 1, 9, 5, 0, 0, 0, -1)))
    assert session_name(old, now=noon) == "1 Mar 2025 09:05 · no runs yet"
