"""A branch run's exports: the HTML report's Throughput is drawn from the branch point on
(its shared prefix is stamped 0 s) and the chosen (forced) token is marked in the text and
chart; the CSV flags the inherited rows and leaves their timings empty."""

from __future__ import annotations

import csv
import io
import re

import pytest

from engine.run.records import TokenRecord, to_dict
from engine.sessions.export_html import PAD_B, PAD_T, H, run_section
from engine.sessions.session_log import RunLog


def tok(step, elapsed, forced=False):
    return to_dict(
        TokenRecord(
            step, 10 + step, f" w{step}", -0.7, 0.5, -0.7, (), (), 1.0, 1.0,
            elapsed, 0.02, 20 + step, forced=forced,
        )
    )  # fmt: skip


def branch_run() -> RunLog:
    prefix = [tok(i, 0.0) for i in range(4)]  # copied from the parent
    own = [tok(4, 0.30, forced=True)] + [
        tok(4 + i, 0.30 + 0.05 * i + 0.004 * i * i) for i in range(1, 12)
    ]
    branch = {"parent": "s/1", "step": 4, "kind": "forced"}
    return RunLog("s/2", "s", 0.0, "Q", {}, records=prefix + own, branch=branch)


def polylines(svg: str) -> list[list[tuple[float, float]]]:
    out = []
    for pts in re.findall(r"<polyline[^>]*points='([^']*)'", svg):
        out.append([tuple(map(float, p.split(","))) for p in pts.split()])
    return out


def test_a_branch_reports_its_own_throughput_and_marks_the_chosen_token():
    html = run_section(branch_run())
    charts = re.findall(r"<svg.*?</svg>", html)
    throughput = next(c for c in charts if "Throughput" in c)
    assert "the branch, from step 4" in throughput
    (line,) = polylines(throughput)
    assert len(line) == 11  # the branch's 12 tokens; the first has no speed of its own
    ys = [y for _x, y in line]
    assert max(ys) < H - PAD_B - 20 and min(ys) >= PAD_T  # drawn well above the 0 line
    assert len(set(ys)) > 1 and "nan" not in throughput
    assert html.count("class='tok forced'") == 1
    forced_span = html[html.index("class='tok forced'") :]
    assert forced_span.index(" w4") < forced_span.index("</span>")
    assert "chosen by the person" in html
    timeline = next(c for c in charts if "Probability timeline" in c)
    assert "chosen &#x27; w4&#x27;" in timeline or "chosen ' w4'" in timeline


def test_a_branchs_csv_marks_the_rows_it_inherited_and_times_only_its_own():
    from engine.sessions.export import to_csv

    run = branch_run()
    rows = list(csv.DictReader(io.StringIO(to_csv(None, [run]))))
    assert [int(r["step"]) for r in rows] == list(range(16))  # the whole answer, in order
    inherited, own = rows[:4], rows[4:]
    assert [r["inherited"] for r in rows] == ["1"] * 4 + ["0"] * 12
    assert all(r["latency_s"] == "" and r["elapsed_s"] == "" for r in inherited)  # not 0
    assert all(r["probability"] == "0.5" for r in inherited)  # the rest of the row is kept
    assert [float(r["latency_s"]) for r in own] == [0.02] * 12
    # Elapsed as constructed in branch_run: 0.30 s, then 0.30 + 0.05 i + 0.004 i^2.
    want = [0.30] + [0.30 + 0.05 * i + 0.004 * i * i for i in range(1, 12)]
    assert [float(r["elapsed_s"]) for r in own] == [round(w, 6) for w in want]
    # A spreadsheet's decode speed over the sampled own rows (step 4 was chosen) is the
    # branch's: 10 steps over the time from step 5 to step 15, not 800 tok/s from 0 s.
    sampled = [float(r["elapsed_s"]) for r in own[1:]]
    assert (len(sampled) - 1) / (sampled[-1] - sampled[0]) == pytest.approx(
        10 / (0.05 * 11 + 0.004 * 121 - 0.05 - 0.004)
    )
    plain = RunLog("s/1", "s", 0.0, "Q", {}, records=[tok(i, 0.1 * (i + 1)) for i in range(3)])
    plain_rows = list(csv.DictReader(io.StringIO(to_csv(None, [plain]))))
    assert [r["inherited"] for r in plain_rows] == ["0"] * 3
    assert [float(r["elapsed_s"]) for r in plain_rows] == [0.1, 0.2, 0.3]
