"""`logitscope export --scale`: the HTML report's probability colours chosen on the
command line (in-process: the parser and the export, no model process)."""

from __future__ import annotations

import pytest

from engine.cli import main
from engine.display.prob_scale import gradient_stops
from engine.run.settings import SamplingSettings


@pytest.fixture(scope="module")
def run_id(tiny_lm):
    from engine.backends.mlx.generate import generate_records
    from engine.sessions.journal import Journal

    journal = Journal.create()
    rid = journal.start_run("hello", SamplingSettings(max_tokens=3).to_dict(), None)
    for rec in generate_records(tiny_lm, "hello", SamplingSettings(max_tokens=3, seed=1)):
        journal.record(rid, rec)
    journal.close()
    return rid


@pytest.mark.parametrize(("option", "scale"), [("red-green", "heat"), ("cividis", "cividis")])
def test_scale_colours_the_html_legend(tmp_path, run_id, option, scale):
    out = tmp_path / "run.html"
    assert main(["export", run_id, "--format", "html", "--scale", option, "-o", str(out)]) == 0
    html = out.read_text()
    other = "cividis" if scale == "heat" else "heat"
    assert all(c in html for _p, c in gradient_stops(scale))  # its legend's stops
    assert not any(c in html for _p, c in gradient_stops(other))


def test_default_is_red_green(tmp_path, run_id):
    out = tmp_path / "run.html"
    assert main(["export", run_id, "--format", "html", "-o", str(out)]) == 0
    assert all(c in out.read_text() for _p, c in gradient_stops("heat"))


def test_scale_is_refused_for_other_formats_and_unknown_names(tmp_path, run_id, capsys):
    out = tmp_path / "run.csv"
    args = ["export", run_id, "--format", "csv", "--scale", "cividis", "-o", str(out)]
    assert main(args) == 2  # bad input
    assert "--scale colours the HTML report only" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(SystemExit) as e:
        main(["export", run_id, "--format", "html", "--scale", "viridis", "-o", str(out)])
    assert e.value.code == 2
    assert "invalid choice: 'viridis'" in capsys.readouterr().err
