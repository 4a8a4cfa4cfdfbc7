"""The branches of an exported session, drawn as nested branch points.

Markdown: a nested list under "## Branches"; HTML: nested lists in a section of
the report. Each run that has branches lists its branch points ("at step K,
after '…'"), and under each point the runs that continued from it with the token
they took, its probability, a preview, length, joint log-probability and mean p
(branch_tree.summarise). Nothing is written for a session without branches.
"""

from __future__ import annotations

from engine.sessions.branch_tree import (
    build_tree,
    describe,
    nodes_from_runs,
    summarise,
    turn_key,
)


def _tree(runs):
    """The roots of `runs`' branch trees that branch, with the other roots of their
    turns (a regenerate is a root of its own), or [] when no run branches."""
    if not any(r.branch for r in runs):
        return []
    nodes = [n for n in nodes_from_runs(runs) if n.step is None or len(n.tokens) > n.step]
    roots = build_tree(nodes)  # a branch that failed before its first token is left out
    keys = {r.run_id: turn_key(r) for r in runs}
    turns = {keys[r.key] for r in roots if r.points and keys.get(r.key) is not None}
    return [r for r in roots if r.points or keys.get(r.key) in turns]


def _after(node, step: int) -> str:
    """The answer before the branch point, on one line (its last 30 characters)."""
    text = " ".join("".join(t.text for t in node.tokens[:step]).split())
    return ("…" + text[-29:]) if len(text) > 30 else text


def branches_markdown(runs, code) -> list[str]:
    """Markdown lines of the branch tree (`code` renders a value as an inline code
    span); [] without branches."""
    roots = _tree(runs)
    if not roots:
        return []
    lines = ["## Branches", ""]

    def item(node, pad: str) -> None:
        s = summarise(node)
        title = f" {code(node.name)}" if node.name else ""
        lines.append(
            f"{pad}- run {code(node.key)}{title}: {code(s.preview)} ({describe_md(s, code)})"
        )
        for step, children in node.points:
            lines.append(f"{pad}  - at step {step}, after {code(_after(node, step))}:")
            for child in children:
                item(child, pad + "    ")

    for root in roots:
        item(root, "")
    return [*lines, ""]


def describe_md(s, code) -> str:
    """A summary for Markdown: the token in a code span, the rest as text."""
    text = describe(s)
    if s.token:
        text = text.replace(repr(s.token), code(repr(s.token)), 1)
    return text


def branches_html(runs, e) -> str:
    """The branch tree as an HTML section (`e` escapes text); "" without branches."""
    roots = _tree(runs)
    if not roots:
        return ""

    def item(node) -> str:
        s = summarise(node)
        name = f" <b>{e(node.name)}</b>" if node.name else ""
        tok = ""
        if s.token:
            how = "chosen" if s.forced else "sampled"
            p = f"{s.prob:.3g}" if s.prob is not None else "n/a"
            tok = f"<code>{e(s.token)}</code> <span class='meta'>({how}, p {p})</span> → "
        stats = []
        stats.append(f"{s.length} tok")
        if s.joint_logprob is not None:
            stats.append(f"log p {s.joint_logprob:.2f}")
        if s.mean_p is not None:
            stats.append(f"mean p {s.mean_p:.2f}")
        head = (
            f"<li>{tok}<q>{e(s.preview)}</q> <span class='meta'>run {e(node.key)}{name} · "
            f"{' · '.join(stats)}</span>"
        )
        points = "".join(
            f"<li>at step {step}, after <q>{e(_after(node, step))}</q>"
            f"<ul>{''.join(item(c) for c in children)}</ul></li>"
            for step, children in node.points
        )
        return head + (f"<ul>{points}</ul>" if points else "") + "</li>"

    return (
        "<section class='branches'><h2>Branches</h2><ul>"
        + "".join(item(r) for r in roots)
        + "</ul></section>"
    )
