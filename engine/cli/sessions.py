"""`logitscope sessions | export | import`: the recorded history."""

from __future__ import annotations

import json
import sys

from engine.cli.args import check_output_name
from engine.cli.session_cost import lines, run_fields, totals
from engine.display.prob_scale import CLI_SCALES
from engine.errors import LogitscopeError, SettingsError
from engine.sessions.export import FORMATS


def add_parser(sub) -> None:
    """Add the `sessions`, `export` and `import` commands."""
    s = sub.add_parser("sessions", help="list recorded sessions and their runs")
    s.add_argument("--json", action="store_true")
    s.add_argument(
        "--cost",
        action="store_true",
        help="sum each session's energy and electricity cost, beside the same tokens' "
        "price on the hosted APIs of your price table",
    )

    e = sub.add_parser("export", help="export a session or one run")
    e.add_argument("ref", metavar="SESSION_OR_RUN", help="a session id, or SESSION/N for a run")
    e.add_argument("--format", required=True, choices=FORMATS)
    e.add_argument("-o", "--output", required=True, help="file to write ('-' = stdout)")
    e.add_argument("--force", action="store_true", help="replace the output file if it exists")
    e.add_argument(
        "--scale",
        choices=tuple(CLI_SCALES),
        help="the HTML report's probability colours; cividis is readable with the common "
        "colour-vision deficiencies (default: red-green)",
    )

    i = sub.add_parser(
        "import",
        help="add an exported JSON session to the history",
        description="Add an exported JSON session to the history, never replacing what is "
        "there. The file must be a regular file of at most 1 GiB; anything else (a folder, a "
        "device, a FIFO, a larger file, a damaged export) is refused with exit status 2.",
    )
    i.add_argument("path")


def cmd_sessions(args) -> int:
    """Run `logitscope sessions`: list sessions and their runs; the exit status."""
    from engine.sessions.journal import list_sessions

    sessions, problems = list_sessions()
    for p in problems:
        print(f"logitscope: warning: unreadable session file {p}", file=sys.stderr)
    prices = _prices(args)
    if args.json:
        out = [
            {
                "session_id": x.session_id,
                "started": x.started,
                "path": str(x.path),
                "runs": [_run_summary(r, prices is not None) for r in x.visible_runs],
                **({"cost": totals(x.visible_runs, prices)} if prices is not None else {}),
            }
            for x in sessions
        ]
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    if not sessions:
        print("No sessions yet: every run in the app is recorded here.")
    for x in sessions:
        print(f"{x.session_id}  {len(x.visible_runs)} run(s)  {x.path}")
        for r in x.visible_runs:
            print(_run_line(r, _run_summary(r)))
        if prices is not None:
            print("\n".join(lines(totals(x.visible_runs, prices), prices)))
    return 0


def _prices(args):
    """The API price table when --cost asks for the sums, else None."""
    from engine.cost.costs import load_prices

    return load_prices() if getattr(args, "cost", False) else None


def _run_line(r, d: dict) -> str:
    from engine.sessions.run_outcome import one_line

    head = f"  {d['run_id']:28} {d['model'] or '(no model)':24} "
    title = f"{'★ ' if r.starred else ''}{r.title}"
    if d["status"] in ("failed", "unfinished"):
        return f"{head}{d['status'].upper()}: {one_line(d['error'])}  {title}"
    tps = f"{d['decode_tps']:6.1f}" if d["decode_tps"] is not None else "     —"
    cancelled = "  (cancelled)" if d["status"] == "cancelled" else ""
    return f"{head}{d['tokens']:5} tok {tps} tok/s  {title}{cancelled}"


def _run_summary(r, cost: bool = False) -> dict:
    from engine.sessions.run_outcome import outcome

    d, end = r.done, outcome(r)
    return {
        **(run_fields(r) if cost else {}),
        "run_id": r.run_id,
        "title": r.title,
        "started": r.started,
        "model": (r.model or {}).get("name"),
        "tokens": sum(not t.eos for t in r.tokens),
        "decode_tps": d.decode_tps if d else None,
        "starred": r.starred,
        "finish_reason": d.finish_reason if d else ("error" if r.error else None),
        "status": end.status,  # ok | cancelled | failed | unfinished
        "error": end.reason if end.status in ("failed", "unfinished") else None,
    }


def cmd_export(args) -> int:
    """Run `logitscope export`: write a session or run in a format; the exit status."""
    from pathlib import Path

    from engine.sessions.export import render
    from engine.sessions.journal import find
    from engine.store.atomic import write_atomic

    try:
        session, run = find(args.ref)
    except LookupError as e:  # a session or run id that names nothing: bad input
        raise SettingsError(str(e)) from None
    if args.scale and args.format != "html":
        raise SettingsError("--scale colours the HTML report only: add --format html")
    scale = CLI_SCALES[args.scale] if args.scale else None
    text = render(args.format, session, [run] if run else None, scale)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    check_output_name(args.output)
    try:
        write_atomic(Path(args.output), text, overwrite=args.force)
    except FileExistsError:
        raise LogitscopeError(
            f"{args.output} already exists: choose another name, or add --force to replace it"
        ) from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_import(args) -> int:
    """Run `logitscope import`: add an exported session to the history; returns 0."""
    from engine.sessions.session_import import SessionImportError, import_json

    try:
        result = import_json(args.path)
    except SessionImportError:
        raise  # bad input: exit 2
    except ValueError as e:
        raise LogitscopeError(str(e)[:300]) from e
    print(result.summary())
    return 0
