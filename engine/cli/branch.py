"""`logitscope branch` and `logitscope sample`: continue a recorded answer from a step.

    logitscope branch SESSION/N --step K (--token TEXT | --token-id ID)
                      [--max-tokens M] [--json]
    logitscope sample SESSION/N --step K [--n 8] [--temp T] [--seed S]
                      [--max-tokens M] [--json]

`branch` puts the given token at answer step K and lets the model go on from
there; `sample` draws N continuations from step K (0: the start of the answer),
sample i with seed S + i (engine/run/continuation.py's SEED_RULE). Each new run goes
into the parent's session with its parent (run, step), runs on the parent's model
with its settings (the options above override them), and reuses the engine's KV
cache of the prompt and the shared answer prefix. `--json` prints, per new run, a
`{"type": "branch", "run_id", "parent", "step", "kind", ...}` line and then the
run's records as `generate --json` does (the parent's first K tokens included).
"""

from __future__ import annotations

import json
import random
import sys

from engine.errors import SettingsError
from engine.run.continuation import SAMPLE_N, SEED_RULE, continuation_from, with_prefix
from engine.run.settings import MAX_SEED, SamplingSettings

MAX_SAMPLES = 64


def add_parser(sub) -> None:
    """Add the `branch` and `sample` commands."""
    b = sub.add_parser("branch", help="continue a recorded answer with another token at a step")
    _common(b)
    token = b.add_mutually_exclusive_group(required=True)
    token.add_argument("--token", default=None, help="the token's text (one vocabulary token)")
    token.add_argument("--token-id", type=int, default=None, help="the token's id")
    s = sub.add_parser("sample", help="sample N continuations of a recorded answer from a step")
    _common(s)
    s.add_argument("--n", type=int, default=SAMPLE_N, help=f"how many continuations ({SEED_RULE})")
    s.add_argument("--temp", type=float, default=None, help="temperature (default: the run's)")
    s.add_argument("--seed", type=int, default=None, help="first seed (default: a random one)")


def _common(p) -> None:
    p.add_argument("run", metavar="SESSION/N", help="the run to continue ('logitscope sessions')")
    p.add_argument("--step", type=int, required=True, help="the answer step, 0 = its start")
    p.add_argument("--max-tokens", type=int, default=None, help="new tokens (default: the run's)")
    p.add_argument("--json", action="store_true", help="one JSON record per line")
    p.add_argument("--top-n", type=int, default=None, help="alternatives kept (default: the run's)")


def _parent(args):
    """(session, run, engine prompt, settings, model spec) of the run to continue."""
    from engine.sessions.journal import find

    try:
        session, run = find(args.run)
    except LookupError as e:
        raise SettingsError(str(e)) from None
    if run is None:
        raise SettingsError(f"'{args.run}' is a session: name one of its runs, SESSION/N")
    model = run.model or {}
    if model.get("backend", "mlx") != "mlx" or not model.get("path"):
        raise SettingsError(
            f"run {run.run_id} ran on a server: branching needs a local model's own tokens "
            "and KV cache"
        )
    if not run.tokens:
        raise SettingsError(f"run {run.run_id} has no tokens to continue from")
    base = SamplingSettings.from_dict({**run.settings_used, "prompt_cache": True})
    changes = {}
    if args.max_tokens is not None:
        changes["max_tokens"] = args.max_tokens
    if args.top_n is not None:
        changes["top_n"] = args.top_n
    if getattr(args, "temp", None) is not None:
        changes["temperature"] = args.temp
    settings = base.with_(**changes).validate()
    prompt = (
        [*run.messages, {"role": "user", "content": run.prompt}] if run.messages else run.prompt
    )
    return session, run, prompt, settings, model["path"]


def cmd_branch(args) -> int:
    """Run `logitscope branch`; the exit status."""
    if args.token is not None and not args.token:
        raise SettingsError("--token is empty: give the token's text, e.g. --token ' green'")
    if args.token is not None and not args.token.isascii():
        try:  # argv bytes that were not UTF-8 arrive as lone surrogates
            args.token.encode("utf-8")
        except UnicodeEncodeError as e:
            raise SettingsError(
                f"--token holds bytes that are not valid text (position {e.start}): "
                "check the terminal's encoding, or give the token's id with --token-id"
            ) from None
    if args.token_id is not None and args.token_id < 0:
        raise SettingsError(f"--token-id must be a token id (0 or more), not {args.token_id}")
    session, run, prompt, settings, spec = _parent(args)
    cont = continuation_from(run.tokens, args.step, args.token_id, args.token)
    branch = {"parent": run.run_id, "step": args.step, "kind": "forced"}
    return _run_all(session, run, prompt, [(settings, cont, branch)], spec, args.json)


def cmd_sample(args) -> int:
    """Run `logitscope sample`; the exit status."""
    if not 1 <= args.n <= MAX_SAMPLES:
        raise SettingsError(f"--n must be 1 to {MAX_SAMPLES}")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED - (args.n - 1):
        raise SettingsError(
            f"--seed must be a whole number from 0 to {MAX_SEED - (args.n - 1)} "
            f"(sample i runs with seed S + i), got {args.seed}"
        )
    session, run, prompt, settings, spec = _parent(args)
    cont = continuation_from(run.tokens, args.step)
    first = args.seed if args.seed is not None else random.randrange(2**31 - MAX_SAMPLES)
    branch = {"parent": run.run_id, "step": args.step, "kind": "sample"}
    jobs = [(settings.with_(seed=first + i), cont, branch) for i in range(args.n)]
    return _run_all(session, run, prompt, jobs, spec, args.json)


def _run_all(session, run, prompt, jobs, spec, as_json: bool) -> int:
    """Run each (settings, continuation, branch) job in turn, journaled in the parent's
    session; the exit status (the worst of the runs'). A run the engine refuses for its
    input (a token outside the vocabulary, text that is not one token) is not journaled,
    and the jobs after it are not started: they would be refused the same way."""
    from engine.process.client import EngineClient
    from engine.sessions.journal import Journal, sessions_dir

    journal = Journal.open(sessions_dir() / f"{session.session_id}.jsonl")
    client = EngineClient()
    status = 0
    try:
        for i, (settings, cont, branch) in enumerate(jobs):
            if cont.forced is not None:
                branch = {**branch, "token_id": cont.forced}
            start = _starter(journal, run, settings, branch, as_json)
            records = client.generate(prompt, settings, spec, continuation=cont)
            records = with_prefix(run.tokens, cont.step, records)
            code = _show(records, start, i, len(jobs), as_json)
            status = max(status, code)
            if code == 2:
                break
    finally:
        client.close()
        journal.close()
    return status


def _starter(journal, run, settings, branch, as_json: bool):
    """A function that starts the run in the journal (and prints its --json branch
    line) when called: only once the engine has accepted the run."""
    from engine.sessions.run_writer import RunWriter

    def start() -> RunWriter:
        writer = RunWriter(
            journal,
            run.prompt,
            settings.to_dict(),
            run.model,
            _warn,
            conversation=run.conversation,
            branch=branch,
        )
        if as_json:
            line = {"type": "branch", "run_id": writer.run_id, **branch}
            print(json.dumps(line, ensure_ascii=False), flush=True)
        return writer

    return start


def _warn(message: str) -> None:
    print(f"logitscope: warning: {message}; this run is not in the history", file=sys.stderr)


ACCEPTED = ("prefill", "token", "done")  # the engine took the run: journal it from here


def _show(records, start, i: int, n: int, as_json: bool) -> int:
    """Print one branch's records and journal them; its exit status.

    The run is started in the journal (`start()`) once the engine accepts it: a run
    refused before that (an error of kind "settings") leaves nothing in the journal.
    """
    status, writer, held = 0, None, []
    for record in records:
        if writer is None:
            if record.type not in ACCEPTED and record.type != "error":
                held.append(record)  # progress, the model: journaled if the run goes ahead
                continue
            if not _refused(record):
                writer = start()
            for early in held:
                _emit(early, writer, as_json)
            held = []
        _emit(record, writer, as_json)
        if record.type == "done" and not as_json:
            _print_done(record, writer, i, n)
        if record.type == "error":
            print(f"logitscope: error: {record.message}", file=sys.stderr)
            status = max(status, 2 if record.kind == "settings" else 1)
    return status


def _refused(record) -> bool:
    return record.type == "error" and record.kind == "settings"


def _emit(record, writer, as_json: bool) -> None:
    """Journal one record (when the run is in the journal) and print it with --json."""
    from engine.run.records import to_dict

    if writer is not None:
        writer.record(record)
    if as_json:
        print(json.dumps(to_dict(record), ensure_ascii=False), flush=True)


def _print_done(record, writer, i: int, n: int) -> None:
    head = f"[{i + 1}/{n} seed {record.seed}] " if n > 1 else ""
    print(f"{head}{record.text}", flush=True)
    if writer is not None and writer.run_id:
        print(
            f"  {writer.run_id}: {record.generated_tokens} tokens, "
            f"{record.cached_tokens} from cache",
            file=sys.stderr,
        )
