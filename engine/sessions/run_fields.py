"""The run entry's own fields, checked as the session schema checks records: which
Compare lane a run was, the conversation it continued, the run it branched from.
A field that fails its check leaves the run readable without it (the callers decide).
"""

from __future__ import annotations

from engine.sessions.session_schema import (
    _COUNT,
    TOKEN_ID,
    SchemaError,
    _int,
    _str,
    is_session_id,
    run_number,
)


def clean_comparison(v) -> dict | None:
    """A run's compare-lane field, checked.

    Args:
        v: {"comparison_id", "lane"}, or None.

    Returns:
        The same two keys (lane 0..64), or None for None.

    Raises:
        SchemaError: not an object, or a bad id or lane.
    """
    if v is None:
        return None
    if not isinstance(v, dict):
        raise SchemaError("comparison must be an object")
    return {"comparison_id": _str(v.get("comparison_id")), "lane": _int(v.get("lane"), 0, 64)}


MAX_TURNS = 10_000


def clean_conversation(v) -> dict | None:
    """A run's conversation field, checked: {"conversation_id", "turn", "messages"}.

    `messages` are the turns before this run's prompt ({role, content}, user and
    assistant alternating as the app sent them); `turn` is this run's 0-based turn.

    Args:
        v: the field, or None.

    Returns:
        Those three keys, each message reduced to role and content; None for None.

    Raises:
        SchemaError: not an object, a bad message, id or turn.
    """
    if v is None:
        return None
    if not isinstance(v, dict):
        raise SchemaError("conversation must be an object")
    messages = v.get("messages", [])
    if not isinstance(messages, list) or len(messages) > 2 * MAX_TURNS:
        raise SchemaError("conversation messages must be a list")
    clean = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant"):
            raise SchemaError("a conversation message is {role, content}")
        clean.append({"role": m["role"], "content": _str(m.get("content"))})
    return {
        "conversation_id": _str(v.get("conversation_id")),
        "turn": _int(v.get("turn"), 0, MAX_TURNS),
        "messages": clean,
    }


BRANCH_KINDS = ("forced", "sample")


def clean_branch(v) -> dict | None:
    """A run's branch field, checked: {"parent", "step", "kind", "token_id"?}.

    `parent` is the run id (`SESSION/N`) it branched from, `step` the answer step it
    continued from, `kind` "forced" (a token chosen by the person, `token_id`) or
    "sample" (sampled from `step` on).

    Args:
        v: the field, or None.

    Returns:
        Those keys checked (token_id only for a forced branch); None for None.

    Raises:
        SchemaError: not an object, a bad parent, step, kind or token id.
    """
    if v is None:
        return None
    if not isinstance(v, dict):
        raise SchemaError("branch must be an object")
    parent = _str(v.get("parent"))
    if (
        not is_session_id(parent.rpartition("/")[0])
        or run_number(parent, parent.rpartition("/")[0]) is None
    ):
        raise SchemaError(f"branch parent {parent[:40]!r} is not a run id (SESSION/N)")
    out = {
        "parent": parent,
        "step": _int(v.get("step"), **_COUNT),
        "kind": _str(v.get("kind", "forced"), choices=BRANCH_KINDS),
    }
    if out["kind"] == "forced" and v.get("token_id") is not None:
        out["token_id"] = _int(v.get("token_id"), *TOKEN_ID)
    return out
