"""The Lab window's tabs (app/lab/views.py) cover the same experiments as the engine's
registry (engine/lab/registry.py), each tab a view the window runs and draws with."""

from __future__ import annotations

from app.lab.views import SHARED, TABS, names, tab_of
from engine.lab.registry import EXPERIMENTS
from tests.app.test_lab_typed import _lab


def test_the_views_cover_the_registry():
    assert names() == set(EXPERIMENTS)
    assert set(TABS).isdisjoint(SHARED) and set(SHARED.values()) <= set(TABS)
    assert all(tab_of(k) in TABS for k in EXPERIMENTS)


def test_the_window_has_one_tab_per_view_in_order(qtbot, tmp_path):
    lab, _client = _lab(qtbot, tmp_path)
    assert list(lab.views) == list(TABS)
    for i, (kind, tab) in enumerate(TABS.items()):
        view = lab.views[kind]
        assert lab.tabs.widget(i) is view and lab.tabs.tabText(i) == tab.title
        assert getattr(lab, tab.attr) is view
        for method in ("params", "show_result"):
            assert callable(getattr(view, method)), (kind, method)
        lab.show_tab(kind)
        assert lab.current_kind() == kind
    assert lab.show_tab("distill-train") is lab.distill
    lab.close()
