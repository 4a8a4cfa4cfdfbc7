"""The tree of a turn's branches: which run continued which, from what step.

Every run that branches from another (engine/run/continuation.py) names its parent
and the answer step it continued from. `build_tree` turns a flat list of runs
into roots, each with its branch points (a step and the runs that continued
from it); `summarise` gives what the tree shows of one branch: the token it took
at its branch point and that token's probability, a preview of what followed,
its length, the joint log-probability of its tokens from the branch point on and
the mean probability of the model's own choices there (forced tokens left out).
Used by the Markdown and HTML exports and the window's Branches view; no Qt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

PREVIEW_CHARS = 60


@dataclass(eq=False)
class BranchNode:
    """One run in the tree.

    Attributes:
        key: the run's identity (its run id, or any object the caller uses).
        tokens: its token records, by step (a branch's include the shared prefix).
        parent: the parent's key; None for a run that branches from nothing.
        step: the answer step it continued from (None for a root).
        kind: "forced" (a token chosen by the person), "sample", or "" for a root.
        name: the name given to it ("" for none).
        points: its branch points: (step, children) sorted by step.
    """

    key: object
    tokens: list
    parent: object = None
    step: int | None = None
    kind: str = ""
    name: str = ""
    points: list = field(default_factory=list)


@dataclass(frozen=True)
class BranchSummary:
    """What the tree shows of one branch (see the module docstring)."""

    token: str  # the token taken at the branch point, as shown ("" for a root)
    prob: float | None  # its probability under the model (None: not reported)
    forced: bool
    preview: str  # the answer from the branch point on, on one line
    length: int  # tokens from the branch point on
    joint_logprob: float | None  # sum of the model's logprobs from the branch point on
    mean_p: float | None  # mean probability of the model's own choices there
    own: int  # how many of those were the model's own choices


def build_tree(nodes: list[BranchNode]) -> list[BranchNode]:
    """Link `nodes` into trees; returns the roots, in the given order.

    A node whose parent is not among `nodes` (deleted, or in another session) is
    a root. Children sit in their parent's `points`, grouped by step, in order.
    """
    by_key = {n.key: n for n in nodes}
    for n in nodes:
        n.points = []
    roots = []
    for n in nodes:
        parent = by_key.get(n.parent) if n.parent is not None else None
        if parent is None or parent is n or _is_descendant(parent, n, by_key):
            roots.append(n)
            continue
        for step, children in parent.points:
            if step == n.step:
                children.append(n)
                break
        else:
            parent.points.append((n.step, [n]))
            parent.points.sort(key=lambda p: p[0])
    return roots


def _is_descendant(node: BranchNode, ancestor: BranchNode, by_key: dict) -> bool:
    """Whether `node` descends from `ancestor` (a cycle in a damaged file)."""
    seen = set()
    while node is not None and id(node) not in seen:
        if node is ancestor:
            return True
        seen.add(id(node))
        node = by_key.get(node.parent) if node.parent is not None else None
    return False


def summarise(node: BranchNode) -> BranchSummary:
    """The tree's line for `node` (from its branch point; a root from step 0)."""
    start = node.step or 0
    tail = [t for t in node.tokens if t.step >= start]
    first = tail[0] if tail and node.step is not None else None
    logps = [t.logprob for t in tail]
    joint = sum(logps) if tail and all(lp is not None for lp in logps) else None
    own = [t.prob for t in tail if not getattr(t, "forced", False) and t.prob is not None]
    text = " ".join("".join(t.text for t in tail).split())
    preview = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
    return BranchSummary(
        token=first.label if first is not None else "",
        prob=first.prob if first is not None else None,
        forced=bool(first is not None and getattr(first, "forced", False)),
        preview=preview,
        length=len(tail),
        joint_logprob=joint if joint is None or math.isfinite(joint) else None,
        mean_p=sum(own) / len(own) if own else None,
        own=len(own),
    )


def walk(roots: list[BranchNode], depth: int = 0):
    """Every node with its depth, parents before children, branch points in order.

    Yields:
        (depth, node, step of the branch point it hangs from or None).
    """
    for n in roots:
        yield depth, n, n.step
        for _step, children in n.points:
            yield from walk(children, depth + 1)


def describe(s: BranchSummary) -> str:
    """A branch's summary on one line of plain text."""
    parts = []
    if s.token:
        how = "chosen" if s.forced else "sampled"
        p = f"p {s.prob:.3g}" if s.prob is not None else "p n/a"
        parts.append(f"{s.token!r} ({how}, {p})")
    parts.append(f"{s.length} tok")
    if s.joint_logprob is not None:
        parts.append(f"log p {s.joint_logprob:.2f}")
    if s.mean_p is not None:
        parts.append(f"mean p {s.mean_p:.2f}" + (" (own choices)" if s.forced else ""))
    return " · ".join(parts)


def turn_key(run) -> tuple | None:
    """(conversation id, turn, earlier messages) of a journaled chat run: the runs that
    share it are siblings of one turn (a regenerate, an edit of its message, a branch);
    None for a raw-completion run."""
    c = getattr(run, "conversation", None) or {}
    if c.get("conversation_id") is None or c.get("turn") is None:
        return None
    return c["conversation_id"], int(c["turn"]), repr(c.get("messages") or [])


def nodes_from_runs(runs) -> list[BranchNode]:
    """BranchNodes of journal runs (RunLog): parents from their `branch` field."""
    out = []
    for r in runs:
        b = r.branch or {}
        out.append(
            BranchNode(
                key=r.run_id,
                tokens=r.tokens,
                parent=b.get("parent"),
                step=b.get("step"),
                kind=b.get("kind", ""),
                name=r.name,
            )
        )
    return out
