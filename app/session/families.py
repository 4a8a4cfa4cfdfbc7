"""A run's branch family: the runs of its turn (its root, every run descending from
it, and the turn's other roots) found among a session's journaled runs, and laid into
a Turn when History reopens one."""

from __future__ import annotations

from app.session.conversation import Answer, Turn
from engine.sessions.branch_tree import turn_key


def family(run, runs) -> list:
    """The runs (RunLogs, file order) in `run`'s turn within `runs`: the root of its
    branch tree (following parents), the turn's other runs (a regenerate is a root of
    its own) and every run that descends from any of them, none in the bin."""
    by_id = {r.run_id: r for r in runs if not getattr(r, "deleted", False)}
    by_id[run.run_id] = run
    parent = lambda r: (getattr(r, "branch", None) or {}).get("parent")  # noqa: E731
    key = turn_key(run)
    starts = [run] + [r for r in by_id.values() if key is not None and turn_key(r) == key]
    ids = set()
    for start in starts:
        root, seen = start, set()
        while parent(root) in by_id and root.run_id not in seen:
            seen.add(root.run_id)
            root = by_id[parent(root)]
        ids.add(root.run_id)
    grew = True
    while grew:
        grew = False
        for r in by_id.values():
            if r.run_id not in ids and parent(r) in ids:
                ids.add(r.run_id)
                grew = True
    members = [r for r in by_id.values() if r.run_id in ids]
    return sorted(members, key=lambda r: getattr(r, "started", 0.0))


def add_family(turn: Turn, answer: Answer, run, runs, state_of) -> None:
    """Put `run`'s branch tree (see `family`) into `turn`, whose only answer is `run`'s
    own (`answer`): its relatives become sibling answers linked to their parents;
    `run` stays current."""
    members = family(run, list(runs))
    if len(members) < 2:
        return
    answers = {run.run_id: answer}
    for r in members:
        if r.run_id not in answers:
            answers[r.run_id] = Answer(r.prompt, state_of(r))
    ordered = [answers[r.run_id] for r in members]
    for r in members:
        b = getattr(r, "branch", None) or {}
        me = answers[r.run_id]
        if b.get("parent") in answers:
            me.parent, me.branch_step = answers[b["parent"]], b.get("step")
            me.branch_kind = b.get("kind", "")
        me.name = r.name
    turn.answers = ordered
    turn.current = ordered.index(answer)
