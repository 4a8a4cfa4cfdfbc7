"""`logitscope read`: a given text read through the model, every token scored.

    logitscope read FILE|- [--model M] [--context TEXT] [--json] [--window|--refuse-long]
    logitscope read --text TEXT ...

Prints the text's perplexity, bits per byte, GLTR's rank buckets and the most
surprising tokens (with a progress bar on a terminal); `--json` prints the
records instead, one per line, the last one the DoneRecord with the summary in
its `reading`. Bad input (no such file, a binary or empty file, an unknown model,
a text too long with --refuse-long) ends with one line and exit 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.cli.args import MODEL_ARG, api_key, model_spec, read_prompt, server_args
from engine.cli.progress import ProgressDisplay
from engine.errors import SettingsError
from engine.reading.request import DEFAULT_TOP_N, MAX_CHUNK, MAX_TOP_N, ReadRequest
from engine.reading.text_file import read_text_file
from engine.run.read_summary import BUCKET_NAMES, ReadSummary


def add_parser(sub) -> None:
    """Add the `read` command."""
    r = sub.add_parser("read", help="read a text through the model: every token's p and rank")
    r.add_argument("file", nargs="?", default=None, help="a UTF-8 text file ('-' reads stdin)")
    r.add_argument("--text", default=None, help="the text itself, instead of a file")
    r.add_argument("--model", default=None, type=MODEL_ARG, help="MLX folder, .gguf file or name")
    server_args(r)
    r.add_argument("--context", default=None, help="text read before it, not scored")
    long = r.add_mutually_exclusive_group()
    long.add_argument(
        "--window",
        dest="long_text",
        action="store_const",
        const="window",
        help="a text longer than the context: read it with a sliding window",
    )
    long.add_argument(
        "--refuse-long",
        dest="long_text",
        action="store_const",
        const="refuse",
        help="a text longer than the context: refuse it, with the numbers",
    )
    r.set_defaults(long_text="window")
    r.add_argument("--top-n", type=int, default=DEFAULT_TOP_N, help="candidates kept per token")
    r.add_argument(
        "--chunk",
        type=int,
        default=None,
        help=f"tokens per forward pass, 1 to {MAX_CHUNK:,} (default: sized from the vocabulary)",
    )
    r.add_argument("--surprising", type=int, default=10, help="most surprising tokens listed")
    r.add_argument("--json", action="store_true", help="one JSON record per line")
    r.add_argument("--no-log", action="store_true", help="do not record the read in history")


def read_text(args) -> tuple[str, str]:
    """The text to read and what to call it.

    Raises:
        SettingsError: neither or both of FILE and --text; a missing, unreadable,
            binary, oversized, non-UTF-8 or empty input.
    """
    if (args.file is None) == (args.text is None):
        raise SettingsError("give a file to read (or - for stdin), or --text TEXT, not both")
    if args.text is not None:
        text, name = read_prompt(args.text), "the text"
    elif args.file == "-":
        text, name = read_prompt("-"), "standard input"
    else:
        text, name = read_text_file(Path(args.file)), args.file
    if not text.strip():
        raise SettingsError(f"{name} is empty: there is nothing to read")
    return text, name


def cmd_read(args) -> int:
    """Run `logitscope read`; the exit status (0, 1 for a failed read, 2 for bad input)."""
    from engine.cli.interrupt import CancelOnInterrupt
    from engine.cli.run_log import RunLogger
    from engine.process.client import EngineClient
    from engine.run.records import to_dict
    from engine.run.settings import SamplingSettings

    text, name = read_text(args)
    if args.context is not None and not args.context.strip():
        raise SettingsError("--context is empty: give some text, or leave the option out")
    if args.surprising < 0:
        raise SettingsError("--surprising must be 0 or more")
    if not 1 <= args.top_n <= MAX_TOP_N:
        raise SettingsError(f"--top-n must be 1 to {MAX_TOP_N}")
    request = ReadRequest(
        text,
        context=read_prompt(args.context) if args.context is not None else None,
        long_text=args.long_text,
        chunk_tokens=args.chunk,
        top_n=args.top_n,
        sweep=args.json,  # the temperature chart's data, for whoever reads the records
    ).validate()
    spec, key = model_spec(args), api_key(args)
    # Journaled as the window journals a read: the text as the run's prompt, the context
    # (if any) as its system prompt; History titles it by its text and reopens it as a read.
    context = request.context if isinstance(request.context, str) else None
    plain = SamplingSettings(
        temperature=1.0, top_p=1.0, top_k=0, min_p=0.0, chat_template=False,
        system_prompt=context,
    )  # fmt: skip
    log = RunLogger(None if args.no_log else (text, plain.to_dict()))
    bar = ProgressDisplay(plain=args.json)
    client = EngineClient()
    status, model, done = 0, None, None
    ctrl_c = CancelOnInterrupt(
        client.cancel
    ).__enter__()  # Ctrl-C: cancelled, journaled, no traceback
    try:
        for record in client.read(request, spec, api_key=key):
            log.record(record)
            if record.type == "progress":
                bar(record.message, record.fraction)
                continue
            if args.json:
                print(json.dumps(to_dict(record), ensure_ascii=False), flush=True)
            if record.type == "model":
                model = record
            elif record.type == "done":
                done = record
            elif record.type == "error":
                bar.close()
                print(f"logitscope: error: {record.message}", file=sys.stderr)
                status = 2 if record.kind in ("settings", "model") else 1
    finally:
        ctrl_c.__exit__()
        bar.close()
        client.close()
        log.close()
    if ctrl_c.pressed:
        return ctrl_c.status(status)
    if done is not None and not args.json:
        print(report(done.reading, name, model.name if model else "the model", args.surprising))
    if done is not None and done.finish_reason == "cancelled":
        status = 1
    return status


def report(s: ReadSummary | None, name: str, model: str, surprising: int = 10) -> str:
    """The read's summary as text (what `logitscope read` prints)."""
    if s is None:
        return f"{name}: nothing was read"
    after = (
        f"after the start token {s.start_token!r}"
        if s.start_token
        else (f"after {s.context_tokens:,} tokens of context")
    )
    lines = [
        f"Read {s.tokens:,} tokens ({s.text_bytes:,} bytes) of {name} with {model}, {after}"
        + ("" if s.complete else " (cancelled: the figures cover what was read)"),
        f"  perplexity     {_num(s.perplexity, '.3f')}",
        f"  bits per byte  {_num(s.bits_per_byte, '.4f')}",
        "  ranks (GLTR)   "
        + " · ".join(
            f"{label}: {n:,} ({n / max(s.tokens, 1):.1%})"
            for label, n in zip(BUCKET_NAMES, s.rank_buckets, strict=False)
        ),
        f"  window         {_window(s)}",
        f"  speed          {_num(s.read_tps, ',.1f')} tokens/s ({s.read_s:.2f} s)",
    ]
    shown = s.surprising[:surprising]
    if shown:
        lines.append("Most surprising tokens:")
        lines.append(f"  {'step':>6}  {'token':<20} {'p':>9}  {'rank':>8}  the model expected")
        for t in shown:
            rank = f"{t.rank:,}" if t.rank is not None else "n/a"
            p = 2.718281828459045**t.logprob
            token, expected = _cut(repr(t.text)), _cut(repr(t.expected))
            lines.append(f"  {t.step:>6}  {token:<20} {p:>9.2e}  {rank:>8}  {expected}")
    return "\n".join(lines)


def _window(s: ReadSummary) -> str:
    if s.window is None:
        ctx = f"the {s.context_length:,}-token context" if s.context_length else "the context"
        return f"none: the whole text fits {ctx}"
    return (
        f"sliding, {s.window:,} tokens: once it slides, each token is predicted from "
        f"{s.window_keep + 1:,} to {s.window:,} tokens before it"
    )


def _num(v: float | None, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def _cut(text: str, limit: int = 20) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
