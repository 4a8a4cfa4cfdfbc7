"""Sample N: the person chooses how many futures (2, 4, 8, 16) in the answer's menu; the
choice runs, is remembered and is checked the next time; 8 until one is made."""

from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtWidgets import QMenu, QWidget

from app.core import settings_store
from app.widgets.branch_menu import (
    SAMPLE_CHOICES,
    SAMPLE_KEY,
    BranchRequests,
    add_branch_actions,
    sample_count,
)
from engine.run.continuation import SAMPLE_N


def _sample_menu(parent, requests) -> QMenu:
    menu = QMenu(parent)
    record = SimpleNamespace(step=3, top=[], token_id=5)
    add_branch_actions(menu, record, requests, lambda: None)
    return next(a.menu() for a in menu.actions() if a.text().startswith("Sample futures"))


def _checked(sub: QMenu) -> list[str]:
    return [a.text() for a in sub.actions() if a.isChecked()]


def test_the_person_chooses_how_many_futures_and_it_is_remembered(qtbot):
    s = settings_store.store()
    s.remove(SAMPLE_KEY)
    s.sync()
    host = QWidget()
    qtbot.addWidget(host)
    requests, asked = BranchRequests(host), []
    requests.sample.connect(lambda step, n: asked.append((step, n)))
    sub = _sample_menu(host, requests)
    assert [a.text() for a in sub.actions()] == [f"{n} futures" for n in SAMPLE_CHOICES]
    assert SAMPLE_N == 8 and sample_count() == SAMPLE_N
    assert _checked(sub) == ["8 futures"]  # the default before any choice
    next(a for a in sub.actions() if a.text() == "4 futures").trigger()
    assert asked == [(3, 4)]
    assert sample_count() == 4 and settings_store.value(SAMPLE_KEY) == "4"
    assert _checked(_sample_menu(host, requests)) == ["4 futures"]  # the next menu


def test_a_count_not_offered_falls_back_to_the_default():
    settings_store.set_value(SAMPLE_KEY, "1000")
    assert sample_count() == SAMPLE_N
    settings_store.set_value(SAMPLE_KEY, "lots")
    assert sample_count() == SAMPLE_N
