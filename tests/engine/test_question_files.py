"""A question file for `lab calibrate` that is nested past any sense, holds a number of
thousands of digits or a cell over csv's limit is refused with its line, in one
sentence, never an internal error."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.errors import SettingsError
from engine.lab.questions import load_questions
from tests.child_memory import ROOT

GOOD = '{"question": "Capital of Peru?", "answers": ["Lima"]}\n'

CASES = [
    (
        "deep.jsonl",
        GOOD + "[" * 100_000 + "]" * 100_000 + "\n",
        "line 2: nests deeper than 64 levels: not a question",
    ),
    (
        "digits.jsonl",
        GOOD + "\n" + '{"question": "Q?", "answers": ["A"], "level": ' + "9" * 5000 + "}\n",
        "line 3: holds a number longer than 100 characters: not a question",
    ),
    (
        "answer.jsonl",
        GOOD + '{"question": "Q?", "answers": [' + "7" * 5000 + "]}\n",
        "line 2: holds a number longer than 100 characters: not a question",
    ),
    (
        "overflow.jsonl",
        '{"question": "Q?", "answers": ["A"], "level": 1e999}\n',
        "line 1: holds a number too large for a float: not a question",
    ),
    (
        "infinity.jsonl",
        '{"question": "Q?", "answers": ["A"], "level": Infinity}\n',
        "line 1: level must be a whole number",
    ),
    (
        "digits.csv",
        "question,answers,level\nQ?,A,1\nQ2?,B," + "9" * 5000 + "\n",
        "line 3: level must be a whole number",
    ),
    (
        "cell.csv",
        "question,answers\nQ?,A\n\nQ2?," + "b" * 200_000 + "\n",
        "line 4: not CSV (field larger than field limit (131072))",
    ),
]


@pytest.mark.parametrize("name, text, said", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_question_file_is_refused_with_its_line(tmp_path, name, text, said):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError) as e:
        load_questions(path)
    assert str(e.value) == f"{path}, {said}"


def test_the_command_says_it_in_one_line_before_any_model_loads(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text(GOOD + "{" * 100_000 + "\n", encoding="utf-8")
    env = {**os.environ, "LOGITSCOPE_DATA_DIR": str(tmp_path / "data")}
    p = subprocess.run(
        [sys.executable, "-m", "engine", "lab", "calibrate", "--questions", str(path)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert p.returncode == 2
    assert p.stderr == (
        f"logitscope: error: {path}, line 2: nests deeper than 64 levels: not a question\n"
    )
    assert not (tmp_path / "data" / "sessions").exists() or not os.listdir(
        tmp_path / "data" / "sessions"
    )
