"""The session's branch rules without Qt: a branch is a sibling run of its parent's
turn, deleting a run re-hangs its branches from the first step they differ, the
tree is drawn from parents (a damaged file's cycle becomes roots), and a run
reopened from History brings its whole branch family."""

from __future__ import annotations

from app.session.conversation import Answer, Turn
from app.session.run_state import RunState
from app.session.session import Session, family
from engine.run.records import TokenRecord
from engine.run.settings import SamplingSettings
from engine.sessions.branch_tree import BranchNode, build_tree, summarise


def tok(step, tid, p=0.5, forced=False):
    return TokenRecord(
        step, tid, f"t{tid}", -0.69, p, -0.69, (), (), 1.0, 1.0, 0.0, 0.0, 10 + step, forced=forced
    )


def state(ids, forced_at=None):
    s = RunState(prompt="Q", settings=SamplingSettings())
    s.add_tokens([tok(i, t, forced=i == forced_at) for i, t in enumerate(ids)])
    return s


def test_branches_are_siblings_and_deleting_rehangs_their_children():
    s = Session()
    parent = state([1, 2, 3, 4])
    s.begin("Q", 0, parent)
    s._running = None
    a = s.begin_branch(s.shown_answer(), 1, "forced", state([1, 9, 9, 9], forced_at=1))
    home = s.home()
    first_branch = home.answer
    assert len(home.answers) == 2 and first_branch.parent.state is parent
    assert a[0] == "Q"  # the parent's prompt is what the engine is sent
    grandchild_state = state([1, 9, 7, 7], forced_at=2)
    s.begin_branch(first_branch, 2, "forced", grandchild_state)
    grandchild = home.answer
    assert s.shown is grandchild_state and s.shown_answer() is grandchild
    # Deleting the middle run: the grandchild differs from the root from step 1.
    s.show_answer(first_branch)
    s.delete_branch(first_branch)
    assert grandchild.parent is home.answers[0] and grandchild.branch_step == 1
    assert grandchild.branch_kind == "forced"
    assert s.shown is parent  # the one before the deleted one is shown
    assert s.delete_branch(home.answers[0]) is not None  # the root: its branch is a root now
    assert grandchild.parent is None and grandchild.branch_step is None
    assert s.delete_branch(grandchild) is None  # a turn's only run stays


def test_tree_summary_and_cycles():
    root = BranchNode("r", [tok(0, 1, 0.9), tok(1, 2, 0.8)])
    b = BranchNode("b", [tok(0, 1, 0.9), tok(1, 5, 0.1, forced=True), tok(2, 6, 0.7)], "r", 1)
    c = BranchNode("c", [tok(0, 3, 0.4)], "r", 0, "sample")
    roots = build_tree([root, b, c])
    assert roots == [root] and [p[0] for p in root.points] == [0, 1]
    s = summarise(b)
    assert s.forced and s.prob == 0.1 and s.length == 2
    assert s.mean_p == 0.7 and s.own == 1  # the forced token left out
    assert abs(s.joint_logprob - 2 * -0.69) < 1e-9
    x, y = BranchNode("x", [], "y", 0), BranchNode("y", [], "x", 0)
    assert set(build_tree([x, y])) >= {x} or set(build_tree([x, y])) >= {y}


def test_a_reopened_run_brings_its_branch_family():
    class Log:
        def __init__(self, n, parent=None, step=None, deleted=False):
            self.run_id, self.started, self.deleted, self.name = f"s/{n}", float(n), deleted, ""
            self.prompt = "Q"
            self.branch = {"parent": parent, "step": step, "kind": "sample"} if parent else None

    runs = [Log(1), Log(2, "s/1", 1), Log(3, "s/2", 2), Log(4, "s/1", 0, deleted=True), Log(5)]
    assert [r.run_id for r in family(runs[2], runs)] == ["s/1", "s/2", "s/3"]
    s = Session()
    shown = RunState(prompt="Q")
    s.restore_raw(runs[1], shown, runs, lambda r: RunState(prompt=r.prompt))
    home = s.home()
    assert len(home.answers) == 3 and home.answer.state is shown
    by_id = dict(zip(["s/1", "s/2", "s/3"], home.answers, strict=True))
    assert by_id["s/3"].parent is by_id["s/2"] and by_id["s/2"].parent is by_id["s/1"]
    assert isinstance(home, Turn) and isinstance(home.answer, Answer)
