"""Exporting sessions and runs: JSON, JSONL, CSV, Markdown and HTML.

JSON is the complete form (`schema_version`) and round-trips through
`session_import.import_json`: export -> import -> export gives the same text.
JSONL is the journal's own line format. HTML lives in `export_html.py`.
Data is never markup: Markdown puts it in code spans, CSV neutralises cells a
spreadsheet would run as a formula, HTML escapes in one helper.
"""

from __future__ import annotations

import csv
import io
import json
import math

from engine.display.units import fmt_or_na as _unit
from engine.display.units import to_mb
from engine.models.display_name import model_name
from engine.run.run_kind import is_inherited, is_read
from engine.sessions.journal import RunLog, SessionLog
from engine.sessions.report_rows import cost_rows, problems, read_rows
from engine.sessions.session_schema import SCHEMA, SCHEMA_VERSION

FORMATS = ("json", "jsonl", "csv", "md", "html")


def to_json(session: SessionLog, runs: list[RunLog] | None = None) -> str:
    """The complete export: the session and each run's settings, model, prompt and records.

    Args:
        session: the session.
        runs: the runs to export; None: its visible runs (not those in the bin).

    Returns:
        JSON text (sorted keys, one-space indent, ending with a newline) that
        `session_import.import_json` reads back.
    """
    runs = session.visible_runs if runs is None else runs
    doc = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "session": {
            "session_id": session.session_id,
            "started": session.started,
            "app_version": session.app_version,
            **({"title": session.title} if session.title else {}),
        },
        "runs": [{**r.header(), "records": r.records} for r in runs],
    }
    return json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def to_jsonl(session: SessionLog, runs: list[RunLog] | None = None) -> str:
    """The session in the journal's own line format.

    Args:
        session: the session.
        runs: the runs to export; None: its visible runs.

    Returns:
        One JSON object per line: the session entry, then each run's entry
        (with its name and starred flag) followed by its record entries.
    """
    runs = session.visible_runs if runs is None else runs
    lines = [
        {
            "kind": "session",
            "session_id": session.session_id,
            "started": session.started,
            "app_version": session.app_version,
            **({"title": session.title} if session.title else {}),
        }
    ]
    for r in runs:
        head = r.header()
        lines.append({"kind": "run", **{k: v for k, v in head.items() if k != "session_id"}})
        lines += [{"kind": "record", "run_id": r.run_id, "record": rec} for rec in r.records]
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in lines)


CSV_COLUMNS = (
    "run_id",
    "step",
    "token_id",
    "token",
    "bytes",
    "eos",
    "probability",
    "logprob",
    "sampled_probability",
    "entropy",
    "sampled_entropy",
    "latency_s",
    "elapsed_s",
    "context_tokens",
    "top",
    "inherited",
)
FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: formula-leading cells get a `'`.

    Args:
        text: the cell's text.

    Returns:
        `text`, prefixed with `'` when it starts with = + - @, a tab or a CR.
    """
    return "'" + text if text.startswith(FORMULA_LEAD) else text


def to_csv(session: SessionLog, runs: list[RunLog] | None = None) -> str:
    """One row per token step, for a spreadsheet.

    The end-of-sequence step is flagged (`eos`); `top` holds the alternatives as
    JSON, named as in the JSON records (`token_id`, `text`, `logprob`, `bytes`);
    `token` is never empty: a partial UTF-8 token is shown as its bytes, as in the app.
    Values not recorded are empty cells, never 0.

    A branch (or a sampled future) holds its parent's answer up to its branch step:
    those rows are kept, so every run's steps read as its whole answer, and flagged
    `inherited` = 1 (engine/run/run_kind.py); their `latency_s` and `elapsed_s` are empty,
    since this run copied them and did not time them. Rows the run generated have
    `inherited` = 0, so a speed worked out in the spreadsheet from the rows with
    `inherited` = 0 is the run's own.

    Args:
        session: the session.
        runs: the runs to export; None: its visible runs.

    Returns:
        CSV text with the CSV_COLUMNS header.
    """
    runs = session.visible_runs if runs is None else runs
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in runs:
        for t in r.tokens:
            inherited = is_inherited(t.step, r.branch)
            # The same keys as a token record's `top` in --json and JSONL (one naming).
            top = [
                {
                    "token_id": c.token_id,
                    "text": c.text,
                    "logprob": c.logprob,
                    "bytes": list(c.bytes) if c.bytes is not None else None,
                }
                for c in t.top
            ]
            raw = " ".join(f"{b:02x}" for b in t.bytes) if t.bytes is not None else ""
            writer.writerow(
                [
                    csv_cell(r.run_id),
                    t.step,
                    t.token_id,
                    csv_cell(t.label or repr(t.text)),
                    raw,
                    int(t.eos),
                    _fmt(t.prob),
                    _fmt(t.logprob),
                    _fmt(_p(t.sampled_logprob)),
                    _fmt(t.entropy),
                    _fmt(t.sampled_entropy),
                    "" if inherited else f"{t.latency_s:.6f}",
                    "" if inherited else f"{t.elapsed_s:.6f}",
                    t.context_tokens,
                    csv_cell(json.dumps(top, ensure_ascii=False)),
                    int(inherited),
                ]
            )
    return out.getvalue()


def _p(logprob) -> float | None:
    return math.exp(logprob) if logprob is not None else None


def _fmt(value, spec: str = ".6g") -> str:
    """A number, or an empty cell where it was not recorded (never a made-up 0)."""
    return "" if value is None else format(value, spec)


def _longest_backticks(text: str) -> int:
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest


def _fence(text: str) -> str:
    """A code fence longer than any backtick run in `text` (model output is text)."""
    return "`" * max(3, _longest_backticks(text) + 1)


def to_markdown(session: SessionLog, runs: list[RunLog] | None = None) -> str:
    """A readable transcript: settings, prompt, answer and statistics per run.

    A read (engine/reading) is written as one: its context, the text and the read's
    figures (tokens read, perplexity, bits per byte…), without the sampling settings,
    which did not apply.

    Args:
        session: the session.
        runs: the runs to export; None: its visible runs.

    Returns:
        Markdown text; every value from a model or a user is in a code span or fence.
    """
    runs = session.visible_runs if runs is None else runs
    lines = [f"# Logitscope session {session.session_id}", ""]
    for r in runs:
        s, d, m = r.settings_used, r.done, r.model or {}
        head = (
            f"Run {_code(r.run_id)} · model {_code(model_name(m))} "
            f"({_code(m.get('quantization', '?'))}, {_code(m.get('device', '?'))})"
        )
        lines += [f"## {'★ ' if r.starred else ''}{_md_escape(r.title)}", ""]
        if is_read(r.tokens, d):
            lines += _read_markdown(r, head)
            continue
        lines += [
            head
            + (
                f" · branch of run {_code(r.branch['parent'])} at step {r.branch['step']} "
                f"({'a chosen token' if r.branch.get('kind') == 'forced' else 'sampled'})"
                if r.branch
                else ""
            ),
            "",
            "| setting | value |",
            "| --- | --- |",
        ]
        for key in (
            "temperature",
            "top_p",
            "top_k",
            "min_p",
            "repetition_penalty",
            "max_tokens",
            "seed",
            "chat_template",
        ):
            lines.append(f"| {key} | {_code(s.get(key))} |")
        if s.get("system_prompt"):
            fence = _fence(s["system_prompt"])
            lines += ["", "**System**", "", fence, s["system_prompt"], fence]
        answer = d.text if d else "".join(t.text for t in r.tokens)
        if r.messages:
            lines += ["", f"**Conversation so far** (this is turn {r.conversation['turn'] + 1})"]
            for m in r.messages:
                fence = _fence(m["content"])
                lines += [
                    "",
                    f"*{m['role'].capitalize()}*",
                    "",
                    fence + "text",
                    m["content"],
                    fence,
                ]
        thinking = "".join(t.text for t in r.tokens if t.thinking)
        if thinking:
            answer = "".join(t.text for t in r.tokens if not t.thinking)
        for title, text in (("Prompt", r.prompt), ("Thinking", thinking), ("Answer", answer)):
            if title == "Thinking" and not text:
                continue
            fence = _fence(text)
            lines += ["", f"**{title}**", "", fence + "text", text, fence]
        if d:
            lines += [
                "",
                "| statistic | value |",
                "| --- | --- |",
                f"| finish | {_code(d.finish_reason)} |",
                f"| prompt tokens | {_unit(d.prompt_tokens, 'd', '')} |",
                f"| generated tokens | {d.generated_tokens} |",
                f"| time to first token | {_unit(d.ttft_s, '.3f', 's')} |",
                f"| prefill | {_unit(d.prefill_tps, '.1f', 'tok/s')} |",
                f"| decode | {_unit(d.decode_tps, '.1f', 'tok/s')} |",
                f"| peak memory | {_unit(to_mb(d.peak_memory_bytes), '.1f', 'MB')} |",
            ]
            lines += [f"| {k} | {_code(v)} |" for k, v in problems(r) if v]
            lines += [f"| {_md_escape(k)} | {_code(v)} |" for k, v in cost_rows(r)]
        if r.error:
            lines += ["", f"> Error: {_md_escape(r.error.message)}"]
        lines.append("")
    from engine.sessions.export_tree import branches_markdown

    lines += branches_markdown(runs, _code)
    return "\n".join(lines)


def _read_markdown(r: RunLog, head: str) -> list[str]:
    """A read's Markdown lines after its title: what it is, its context, the text and
    the read's statistics (report_rows.read_rows)."""
    lines = [head + " · a text read through the model"]
    context = r.settings_used.get("system_prompt")
    for title, text in (
        ("Context (read before the text, not scored)", context),
        ("Text", r.prompt),
    ):
        if text:
            fence = _fence(text)
            lines += ["", f"**{title}**", "", fence + "text", text, fence]
    # No cost rows: they price generated tokens, and a read generated none.
    rows = (*read_rows(r), *((k, v) for k, v in problems(r) if v))
    lines += ["", "| statistic | value |", "| --- | --- |"]
    lines += [f"| {_md_escape(k)} | {_code(v)} |" for k, v in rows]
    if r.error:
        lines += ["", f"> Error: {_md_escape(r.error.message)}"]
    return [*lines, ""]


def _md_escape(text: str) -> str:
    """Markdown text that renders as itself: no HTML, links, emphasis or new blocks."""
    text = " ".join(str(text).split())
    return "".join("\\" + c if c in "\\`*_[]()<>#|!&~" else c for c in text)


def _code(value) -> str:
    """`value` as an inline code span (never HTML or a link); `|` escaped for tables."""
    text = " ".join(str(value).split()).replace("|", "\\|")
    fence = "`" * (_longest_backticks(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def render(
    fmt: str, session: SessionLog, runs: list[RunLog] | None = None, scale: str | None = None
) -> str:
    """A session in one of the export formats.

    Args:
        fmt: one of FORMATS (json | jsonl | csv | md | html).
        session: the session.
        runs: the runs to export; None: its visible runs.
        scale: the HTML report's probability colour scale (None: the default).

    Returns:
        The exported text.

    Raises:
        ValueError: an unknown format.
    """
    if fmt == "html":
        from engine.display.prob_scale import scale_name
        from engine.sessions.export_html import to_html

        return to_html(session, runs, scale_name(scale))
    table = {"json": to_json, "jsonl": to_jsonl, "csv": to_csv, "md": to_markdown}
    if fmt not in table:
        raise ValueError(f"unknown format '{fmt}': choose one of {', '.join(FORMATS)}")
    return table[fmt](session, runs)
