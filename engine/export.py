"""Exporting sessions and runs: JSON, JSONL, CSV, Markdown and HTML; importing JSON.

JSON is the complete form (`schema_version` below) and round-trips: export ->
import -> export gives the same text. JSONL is the journal's own line format.
HTML lives in `export_html.py`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from engine.journal import RunLog, SessionLog, read_session, sessions_dir

SCHEMA = "logitscope.session"
SCHEMA_VERSION = 1
FORMATS = ("json", "jsonl", "csv", "md", "html")


def to_json(session: SessionLog, runs: list[RunLog] | None = None) -> str:
    """Everything: the session, each run's settings, model, prompt and records."""
    runs = session.visible_runs if runs is None else runs
    doc = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "session": {
            "session_id": session.session_id,
            "started": session.started,
            "app_version": session.app_version,
        },  # fmt: skip
        "runs": [{**r.header(), "records": r.records} for r in runs],
    }
    return json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def to_jsonl(session: SessionLog, runs: list[RunLog] | None = None) -> str:
    runs = session.visible_runs if runs is None else runs
    lines = [{"kind": "session", "session_id": session.session_id,
              "started": session.started, "app_version": session.app_version}]  # fmt: skip
    for r in runs:
        head = r.header()
        lines.append({"kind": "run", **{k: v for k, v in head.items() if k != "session_id"}})
        lines += [{"kind": "record", "run_id": r.run_id, "record": rec} for rec in r.records]
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in lines)


CSV_COLUMNS = (
    "run_id", "step", "token_id", "token", "probability", "logprob", "sampled_probability",
    "entropy", "sampled_entropy", "latency_s", "elapsed_s", "context_tokens", "top",
)  # fmt: skip


def to_csv(session: SessionLog, runs: list[RunLog] | None = None) -> str:
    """One row per generated token; `top` holds the alternatives as JSON."""
    runs = session.visible_runs if runs is None else runs
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in runs:
        for t in r.tokens:
            top = [{"token": c.text, "token_id": c.token_id, "probability": _p(c.logprob)}
                   for c in t.top]  # fmt: skip
            writer.writerow([
                r.run_id, t.step, t.token_id, t.text, f"{t.prob:.6g}", f"{t.logprob:.6g}",
                f"{_p(t.sampled_logprob):.6g}", f"{t.entropy:.6g}", f"{t.sampled_entropy:.6g}",
                f"{t.latency_s:.6f}", f"{t.elapsed_s:.6f}", t.context_tokens,
                json.dumps(top, ensure_ascii=False),
            ])  # fmt: skip
    return out.getvalue()


def _p(logprob) -> float:
    return math.exp(logprob) if logprob is not None else 0.0


def _fence(text: str) -> str:
    """A code fence longer than any backtick run in `text` (model output is text)."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def to_markdown(session: SessionLog, runs: list[RunLog] | None = None) -> str:
    """A readable transcript: settings, prompt, answer and statistics per run."""
    runs = session.visible_runs if runs is None else runs
    lines = [f"# Logitscope session {session.session_id}", ""]
    for r in runs:
        s, d, m = r.settings, r.done, r.model or {}
        lines += [f"## {'★ ' if r.starred else ''}{_md_escape(r.title)}", "",
                  f"Run `{r.run_id}` · model **{m.get('name', '?')}** "
                  f"({m.get('quantization', '?')}, {m.get('device', '?')})", "",
                  "| setting | value |", "| --- | --- |"]  # fmt: skip
        for key in ("temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                    "max_tokens", "seed", "chat_template"):  # fmt: skip
            lines.append(f"| {key} | {s.get(key)} |")
        if s.get("system_prompt"):
            fence = _fence(s["system_prompt"])
            lines += ["", "**System**", "", fence, s["system_prompt"], fence]
        answer = d.text if d else "".join(t.text for t in r.tokens)
        for title, text in (("Prompt", r.prompt), ("Answer", answer)):
            fence = _fence(text)
            lines += ["", f"**{title}**", "", fence + "text", text, fence]
        if d:
            lines += ["", "| statistic | value |", "| --- | --- |",
                      f"| finish | {d.finish_reason} |",
                      f"| prompt tokens | {d.prompt_tokens} |",
                      f"| generated tokens | {d.generated_tokens} |",
                      f"| time to first token | {d.ttft_s:.3f} s |",
                      f"| prefill | {d.prefill_tps:.1f} tok/s |",
                      f"| decode | {d.decode_tps:.1f} tok/s |",
                      f"| peak memory | {d.peak_memory_bytes / 1e6:.0f} MB |"]  # fmt: skip
        if r.error:
            lines += ["", f"> Error: {_md_escape(r.error.message)}"]
        lines.append("")
    return "\n".join(lines)


def _md_escape(text: str) -> str:
    return "".join("\\" + c if c in "\\`*_[]<>#|" else c for c in text)


def render(fmt: str, session: SessionLog, runs: list[RunLog] | None = None) -> str:
    if fmt == "html":
        from engine.export_html import to_html

        return to_html(session, runs)
    table = {"json": to_json, "jsonl": to_jsonl, "csv": to_csv, "md": to_markdown}
    if fmt not in table:
        raise ValueError(f"unknown format '{fmt}': choose one of {', '.join(FORMATS)}")
    return table[fmt](session, runs)


def import_json(path: Path, folder: Path | None = None) -> SessionLog:
    """Turn an exported JSON back into a journal in the history.

    Raises:
        ValueError: not a Logitscope export, or a newer schema.
    """
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {path}: {e}") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e.msg} at line {e.lineno})") from e
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ValueError(f"{path} is not a Logitscope session export")
    if doc.get("schema_version", 0) > SCHEMA_VERSION:
        raise ValueError(f"{path} was written by a newer Logitscope; update to open it")
    s = doc["session"]
    target = (folder or sessions_dir()) / f"{s['session_id']}.jsonl"
    entries = [{"kind": "session", **s}]
    for run in doc["runs"]:
        head = {k: run[k] for k in ("run_id", "started", "prompt", "settings", "model")}
        if run.get("comparison"):
            head["comparison"] = run["comparison"]
        entries.append({"kind": "run", **head})
        entries.append({"kind": "meta", "run_id": run["run_id"], "name": run.get("name", ""),
                        "starred": bool(run.get("starred", False))})  # fmt: skip
        entries += [{"kind": "record", "run_id": run["run_id"], "record": r}
                    for r in run["records"]]  # fmt: skip
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
    tmp = target.with_suffix(".importing")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
    return read_session(target)
