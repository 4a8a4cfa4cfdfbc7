"""A read's HTML report: a tiny probability keeps its digits (never "p=0.0%"), and the
least likely token's chart shows the token read as a bar of its own when it is not
among the top candidates (a read's token can be rank 803)."""

from __future__ import annotations

import math
import re

from engine.run.records import TokenRecord, TopToken, to_dict
from engine.sessions.export_html import W, run_section, svg_distribution
from engine.sessions.session_log import RunLog

TOP = [(" the", 0.31), (" a", 0.12), (" in", 0.07), (" is", 0.05), (" of", 0.04)]
TOP += [(" and", 0.03), (" to", 0.02), (" on", 0.01), (" at", 0.009)]


def read_tok(step, token_id, text, p, rank):
    top = tuple(TopToken(100 + i, t, math.log(q)) for i, (t, q) in enumerate(TOP))
    return to_dict(
        TokenRecord(
            step, token_id, text, math.log(p), p, math.log(p), top, top, 3.0, 3.0,
            0.01 * step, 0.01, 2 + step, rank=rank, read=True,
        )
    )  # fmt: skip


def read_run() -> RunLog:
    records = [
        read_tok(0, 7, "Lightning", 0.02, 40),
        read_tok(1, 8, " never", 0.000085, 803),  # the least likely: not in the top 8
        read_tok(2, 100, " the", 0.31, 1),
    ]
    return RunLog("s/1", "s", 0.0, "Lightning never the", {}, records=records)


def _rows(svg: str) -> list[tuple[str, float, str]]:
    """(label, raw bar width, the text after the bar) of each candidate row."""
    labels = re.findall(r"<text x='\d+' y='[\d.]+' text-anchor='end'[^>]*>([^<]*)</text>", svg)
    widths = [float(w) for w in re.findall(r"width='([\d.]+)' height='7' fill='#4c78a8'", svg)]
    after = re.findall(r"fill='#f58518'/><text [^>]*>([^<]*)</text>", svg)
    return list(zip(labels, widths, after, strict=True))


def test_the_least_likely_token_read_has_its_digits_and_its_own_bar():
    run = read_run()
    svg = svg_distribution(run)
    title = re.search(r"font-weight='bold'>([^<]*)</text>", svg).group(1)
    assert "read &#x27; never&#x27; (p=0.0085%, rank 803)" in title
    assert "0.0%" not in svg
    rows = _rows(svg)
    assert len(rows) == 9  # the top eight, then the token read
    labels = [label for label, _w, _a in rows]
    assert labels == [repr(t).replace("'", "&#x27;") for t, _q in TOP[:8]] + ["&#x27; never&#x27;"]
    # bars to scale: width = (W - 110 - 110) * p / the largest p
    ps = [q for _t, q in TOP[:8]] + [0.000085]
    for (_label, width, _after), p in zip(rows, ps, strict=True):
        assert abs(width - (W - 220) * p / 0.31) < 0.06
    assert rows[0][2] == "31.0%" and rows[7][2] == "1.0%"
    assert rows[-1][2] == "0.0085% · the token read, rank 803"
    # the hover box of the token in the shaded text says the same
    html = run_section(run)
    assert "p=0.0085%" in html and "p=0.0%" not in html


def test_a_token_among_the_candidates_gets_no_second_bar():
    records = [read_tok(0, 104, " of", 0.04, 5), read_tok(1, 100, " the", 0.31, 1)]
    svg = svg_distribution(RunLog("s/1", "s", 0.0, "of the", {}, records=records))
    rows = _rows(svg)
    assert len(rows) == 8 and "the token read" not in svg
    assert "(p=4.0%, rank 5)" in svg
