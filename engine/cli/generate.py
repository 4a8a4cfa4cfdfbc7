"""`logitscope generate`: one prompt, streamed to stdout (or as JSON records)."""

from __future__ import annotations

import json
import sys
import uuid

from engine.cli.args import MODEL_ARG, api_key, model_spec, read_prompt, server_args, settings_from
from engine.cli.json_steps import JsonSteps
from engine.cli.progress import ProgressDisplay
from engine.errors import SettingsError
from engine.run.openai_chunks import ChunkWriter
from engine.run.settings import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_P,
    DEFAULT_REPETITION_PENALTY,
    DEFAULT_TEMPERATURE,
    DEFAULT_TOP_K,
    DEFAULT_TOP_N,
    DEFAULT_TOP_P,
)


def add_parser(sub) -> None:
    """Add the `generate` command."""
    g = sub.add_parser("generate", help="run one prompt and stream the answer")
    g.add_argument("--prompt", required=True, help="the prompt ('-' reads stdin)")
    g.add_argument("--model", default=None, type=MODEL_ARG, help="MLX folder, .gguf file or name")
    server_args(g)
    g.add_argument("--temp", type=float, default=DEFAULT_TEMPERATURE, help="0 = greedy")
    g.add_argument("--top-p", type=float, default=DEFAULT_TOP_P)
    g.add_argument("--top-k", type=int, default=DEFAULT_TOP_K)
    g.add_argument("--min-p", type=float, default=DEFAULT_MIN_P)
    g.add_argument("--repetition-penalty", type=float, default=DEFAULT_REPETITION_PENALTY)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
    g.add_argument("--stop", action="append", default=[], help="stop string (repeat)")
    g.add_argument("--system", default=None, help="system prompt")
    g.add_argument("--raw", action="store_true", help="raw completion, no chat template")
    g.add_argument("--top-n", type=int, default=DEFAULT_TOP_N, help="alternatives kept")
    g.add_argument(
        "--json",
        action="store_true",
        help="one JSON record per line, each token step once (a server that sends "
        "log-probabilities after the answer, mlx_lm.server, has its steps printed at "
        'the end; a step printed again carries "revision": true)',
    )
    g.add_argument(
        "--format",
        choices=["logitscope", "openai"],
        default="logitscope",
        help="with --json: Logitscope's records, or OpenAI chat.completion.chunk objects",
    )
    g.add_argument("--no-log", action="store_true", help="do not record the run in history")


def cmd_generate(args) -> int:
    """Run `logitscope generate`: stream one answer and journal it; the exit status."""
    from engine.cli.interrupt import CancelOnInterrupt
    from engine.process.client import EngineClient
    from engine.run.records import to_dict

    prompt = read_prompt(args.prompt)
    if not prompt.strip():
        raise SettingsError("the prompt is empty: pass some text with --prompt")
    settings = settings_from(args)
    spec, key = model_spec(args), api_key(args)
    from engine.cli.run_log import RunLogger

    if args.format == "openai" and not args.json:
        raise SettingsError("--format openai needs --json (it prints JSON chunks)")
    log = RunLogger(None if args.no_log else (prompt, settings.to_dict()))
    client = EngineClient()
    status, shown = 0, 0
    bar = ProgressDisplay(plain=args.json)
    chunks = ChunkWriter(uuid.uuid4().hex[:24]) if args.format == "openai" else None
    steps = JsonSteps(settings.top_n) if args.json else None  # each step once
    ctrl_c = CancelOnInterrupt(
        client.cancel
    ).__enter__()  # Ctrl-C: cancelled, journaled, no traceback
    try:
        for record in client.generate(prompt, settings, spec, api_key=key):
            log.record(record)
            if record.type == "progress" and chunks is None and args.json:
                print(json.dumps(to_dict(record), ensure_ascii=False), flush=True)
                continue
            if record.type == "progress":  # one bar on a terminal, else plain lines
                bar(record.message, record.fraction)
                continue
            bar.close()
            if steps is not None:
                for rec, revision in steps.feed(record):
                    _print_json(rec, revision, chunks)
            elif record.type != "token" or record.step >= shown:  # re-sent tokens: once
                shown = record.step + 1 if record.type == "token" else shown
                _print_plain(record)
            if record.type == "error":
                if not args.json:
                    print(f"logitscope: error: {record.message}", file=sys.stderr)
                status = 2 if record.kind == "settings" else 1
            elif record.type == "done" and record.finish_reason == "error":
                if not args.json:  # the stats line says [error]: say what happened
                    print(f"logitscope: error: {record.error or 'the run failed'}", file=sys.stderr)
                status = 1
    finally:
        ctrl_c.__exit__()
        bar.close()
        client.close()
        log.close()
    return ctrl_c.status(status)


def _print_json(record, revision: bool, chunks) -> None:
    """One record as a JSON line (or OpenAI chunks); a revised step is marked so
    (and left out of OpenAI's shape, which has no such mark)."""
    from engine.run.records import to_dict

    if chunks is not None:
        for chunk in chunks.chunks(record) if not revision else ():
            print(json.dumps(chunk, ensure_ascii=False), flush=True)
        return
    data = to_dict(record)
    if revision:
        data["revision"] = True
    print(json.dumps(data, ensure_ascii=False), flush=True)


def _print_plain(record) -> None:
    if record.type == "token":
        sys.stdout.write(record.text)
        sys.stdout.flush()
    elif record.type == "done":
        sys.stdout.write("\n")
        from engine.display.units import fmt_mb, fmt_or_na

        print(
            f"[{record.finish_reason}] {record.generated_tokens} tokens, "
            f"TTFT {fmt_or_na(record.ttft_s, '.2f', 's')}, "
            f"prefill {fmt_or_na(record.prefill_tps, '.1f', 'tok/s')}, "
            f"decode {fmt_or_na(record.decode_tps, '.1f', 'tok/s')}, "
            f"peak {fmt_mb(record.peak_memory_bytes)}, "
            f"seed {record.seed if record.seed is not None else 'n/a'}",
            file=sys.stderr,
        )
