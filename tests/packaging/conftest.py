"""Say at the end of the run when the frozen app's test was skipped (it is opt-in)."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    from tests.packaging.test_frozen_app import SKIPPED

    for report in terminalreporter.stats.get("skipped", []):
        if SKIPPED in str(report.longrepr):
            terminalreporter.write_line(f"NOTE: {SKIPPED} (see README, A double-clickable app)")
            return
