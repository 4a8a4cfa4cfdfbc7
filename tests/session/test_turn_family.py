"""A turn reopened from History comes back with every run it had live: a regenerate
(a root of its own, no branch parent), a branch and Sample 8 are 11 runs, and the
Markdown export's Branches section lists all 11."""

from __future__ import annotations

from pathlib import Path

from app.session.run_state import RunState
from app.session.session import Session, family
from engine.run.records import TokenRecord, to_dict
from engine.sessions.export import to_markdown
from engine.sessions.session_log import RunLog, SessionLog

CONV = {
    "conversation_id": "c1",
    "turn": 1,
    "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
}


def tok(step, tid, forced=False):
    return TokenRecord(
        step,
        tid,
        f"t{tid}",
        -0.69,
        0.5,
        -0.69,
        (),
        (),
        1.0,
        1.0,
        0.0,
        0.0,
        10 + step,
        forced=forced,
    )


def log(n, ids, branch=None, conversation=CONV, prompt="Q"):
    records = [
        to_dict(tok(i, t, forced=bool(branch) and i == branch["step"])) for i, t in enumerate(ids)
    ]
    return RunLog(
        run_id=f"s/{n}",
        session_id="s",
        started=float(n),
        prompt=prompt,
        settings={},
        records=records,
        conversation=conversation,
        branch=branch,
    )


def eleven_runs() -> list[RunLog]:
    """Turn 2: a run, its regenerate, a branch of the regenerate, 8 samples of it."""
    runs = [log(1, [1, 2, 3]), log(2, [4, 5, 6])]
    runs.append(log(3, [4, 9, 9], {"parent": "s/2", "step": 1, "kind": "forced"}))
    for i in range(8):
        runs.append(log(4 + i, [4, 5, 20 + i], {"parent": "s/2", "step": 2, "kind": "sample"}))
    # Not of this turn: the first turn, and turn 2 after an edit of turn 1 (other history).
    runs.append(log(12, [7], conversation={**CONV, "turn": 0, "messages": []}, prompt="Hi"))
    other = {**CONV, "messages": [{"role": "user", "content": "Hey"}]}
    runs.append(log(13, [8], conversation=other))
    return runs


def test_a_reopened_turn_keeps_its_regenerate_with_the_branches():
    runs = eleven_runs()
    sample = runs[10]
    assert [r.run_id for r in family(sample, runs)] == [f"s/{n}" for n in range(1, 12)]
    s = Session()
    shown = RunState(prompt="Q")
    s.restore(sample, shown, runs, lambda r: RunState(prompt=r.prompt))
    answers, current = s.conversation.siblings(1)
    assert len(answers) == 11 and answers[current].state is shown and current == 10
    assert answers[0].parent is None and answers[1].parent is None  # run and regenerate
    assert answers[2].parent is answers[1] and answers[2].branch_step == 1
    assert all(a.parent is answers[1] and a.branch_step == 2 for a in answers[3:])


def test_the_markdown_branches_section_lists_the_regenerate():
    runs = eleven_runs()
    text = to_markdown(SessionLog("s", Path("s.jsonl"), 0.0, runs=runs), runs[:11])
    section = text[text.index("## Branches") :]
    listed = [n for n in range(1, 12) if f"- run `s/{n}`" in section]
    assert listed == list(range(1, 12))
