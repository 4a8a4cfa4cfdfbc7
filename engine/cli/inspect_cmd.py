"""`logitscope inspect`: the numbers the *Inside the model* views show.

    logitscope inspect --prompt TEXT [--model M] [--step N]
                       --what attention|lens|tokens|journey|position
                       [--layer L] [--head H] [--raw] [--system S] [--json]
                       [--temp T --top-p P --sample-top-k K --min-p M --repetition-penalty R]

The sampling options only shape the journey's sampler funnel (what those settings
would do to the step's distribution); the answer inspected is plain greedy (no
penalty, no filter).

With --step N (0 to MAX_INSPECT_STEP, and within the context window after the
prompt: refused at once otherwise) the prompt is first answered greedily for N + 1
tokens (as the window's run would be at T = 0) and step N of that answer is
inspected; without it, the prompt alone (what it predicts next). Every view reads
the last 1,024 tokens of a longer context, and the text says so. An engine that
dies or hangs while answering or inspecting ends the command with one line naming
the phase and exit 1; nothing is printed as if it were a result.
"""

from __future__ import annotations

import json
import sys

from engine.cli.args import MODEL_ARG
from engine.errors import EngineFault, LogitscopeError, SettingsError, error_for
from engine.inside.inspect_request import LENS_TOP, InspectRequest
from engine.run.settings import MAX_LENS_TOP, SamplingSettings

# --step answers greedily first (a CPU makes ~10 tokens a second): a longer answer is a
# wait of minutes, and an inspection covers the last 1,024 tokens of the context anyway
MAX_INSPECT_STEP = 1024


def add_parser(sub) -> None:
    """Add the `inspect` command."""
    i = sub.add_parser("inspect", help="look inside the model at one step")
    i.add_argument("--prompt", required=True, help="the prompt ('-' reads stdin)")
    i.add_argument("--model", default=None, type=MODEL_ARG, help="MLX folder, .gguf file or name")
    i.add_argument(
        "--step",
        type=int,
        default=None,
        help=f"step of the greedy answer, 0 to {MAX_INSPECT_STEP:,} (and within the context)",
    )
    i.add_argument(
        "--what",
        required=True,
        choices=["attention", "lens", "tokens", "journey", "position"],
        help="the view: attention, lens, tokens, journey (seven steps), position",
    )
    i.add_argument("--layer", type=int, default=0, help="attention: the layer (0-based)")
    i.add_argument("--head", type=int, default=None, help="attention: the head (default: mean)")
    i.add_argument(
        "--top-k",
        type=int,
        default=LENS_TOP,
        help=f"lens: predictions kept per layer (1-{MAX_LENS_TOP})",
    )
    i.add_argument("--system", default=None, help="system prompt")
    i.add_argument("--raw", action="store_true", help="raw completion, no chat template")
    i.add_argument("--json", action="store_true", help="print the numbers as JSON")
    f = i.add_argument_group(
        "journey: the sampler funnel's settings (the answer stays plain greedy, unpenalised)"
    )
    f.add_argument("--temp", type=float, default=0.0, help="temperature (0 = greedy)")
    f.add_argument("--top-p", type=float, default=1.0, help="top-p (1 = off)")
    f.add_argument("--sample-top-k", type=int, default=0, help="top-k (0 = off)")
    f.add_argument("--min-p", type=float, default=0.0, help="min-p (0 = off)")
    f.add_argument("--repetition-penalty", type=float, default=1.0, help="1 = off")


def cmd_inspect(args) -> int:
    """Run `logitscope inspect` at one step of the greedy answer; the exit status."""
    from engine.cli.args import read_prompt

    prompt = read_prompt(args.prompt)
    if not prompt.strip():
        raise SettingsError("the prompt is empty: pass some text with --prompt")
    if args.step is not None and not 0 <= args.step <= MAX_INSPECT_STEP:
        raise SettingsError(
            f"--step must be 0 to {MAX_INSPECT_STEP:,} (the answer's tokens from 0), "
            f"got {args.step}"
        )
    if not 1 <= args.top_k <= MAX_LENS_TOP:
        raise SettingsError(
            f"--top-k (the lens's predictions per layer) must be 1 to {MAX_LENS_TOP}, "
            f"got {args.top_k}"
        )
    settings = SamplingSettings(
        temperature=args.temp,
        top_p=args.top_p,
        top_k=args.sample_top_k,
        min_p=args.min_p,
        repetition_penalty=args.repetition_penalty,
        system_prompt=args.system,
        chat_template=not args.raw,
        seed=0,
    ).validate()
    if args.what == "tokens":
        return _tokens(prompt, args)
    if args.step is not None:
        _check_step(args.step, prompt, settings, args.model)
    from engine.process.client import EngineClient

    client = EngineClient()
    request = InspectRequest(args.what, args.step, args.layer, args.head, args.top_k)
    try:
        record = _result(client.inspect_answer(prompt, settings, request, args.model))
    finally:
        client.close()
    if args.json:
        from engine.run.records import to_dict

        print(json.dumps(to_dict(record), ensure_ascii=False))
    else:
        _print(record)
    return 0


def _check_step(step: int, prompt: str, settings, model: str | None) -> None:
    """Refuse at once a step the greedy answer cannot reach: the context window holds
    the prompt and at most (window - prompt) answer tokens. Checked with the folder's
    own tokenizer when the model is already on disk (else the engine finds out)."""
    from engine.models.catalogue import inspect_model
    from engine.models.light_tokenizer import LightTokenizer
    from engine.run.prompt import encode_prompt

    folder = _folder_on_disk(model)
    if folder is None:
        return
    try:
        window = inspect_model(folder).context_length
        n = len(encode_prompt(LightTokenizer(folder), prompt, settings).ids)
    except (LogitscopeError, OSError, ValueError):
        return  # the engine reports a model or prompt it cannot use, in its words
    if window and n < window and step > window - n - 1:
        raise SettingsError(
            f"step {step} cannot exist: the model's context window of {window:,} tokens "
            f"holds the prompt's {n:,} and at most {window - n:,} answer tokens "
            f"(steps 0 to {window - n - 1:,})"
        )
    if step >= 100:
        print(f"logitscope: answering greedily for {step + 1:,} tokens first", file=sys.stderr)


def _folder_on_disk(model: str | None):
    """The model's folder when it needs no download or conversion, else None."""
    from pathlib import Path

    from engine.models.default_model import default_model_dir, is_default_model_ready
    from engine.store.paths import models_dir

    if not model:
        return default_model_dir() if is_default_model_ready() else None
    for folder in (Path(model).expanduser(), models_dir() / model):
        if folder.is_dir():
            return folder
    return None


def _result(records):
    """The inspection's record; an error (an engine that died or hung, a refused
    request) raises, and a stream that ends without a result is a failure too."""
    for record in records:
        if record.type == "error":
            raise error_for(record)
        if record.type == "progress" and record.message.startswith("the answer ended"):
            print(f"logitscope: {record.message}", file=sys.stderr)
        if record.type == "inspect":
            return record
    raise EngineFault("the engine ended the inspection without a result; run it again")


def _tokens(prompt: str, args) -> int:
    from engine.models.catalogue import list_models
    from engine.models.light_tokenizer import shared_tokenizer
    from engine.models.token_explorer import counts_by_model, economy, split, stats

    folder = _folder(args.model)
    tok = shared_tokenizer(folder)  # counts_by_model reads the same one
    spans = split(tok, prompt)
    out = {
        "model": str(folder),
        "spans": [
            {"id": s.token_id, "text": s.text, "label": s.label, "bytes": list(s.bytes)}
            for s in spans
        ],
        **stats(len(spans), prompt),
        "by_model": counts_by_model(prompt, list_models(other_tools=False)),
        "economy": economy(tok),
    }
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print(" | ".join(s.label for s in spans))
    print(
        f"{len(spans)} tokens · {out['tokens_per_word']:.2f} per word · "
        f"{out['tokens_per_character']:.2f} per character"
    )
    for name, n in out["by_model"].items():
        print(f"  {name}: {n}")
    return 0


def _folder(model: str | None):
    from engine.backends.mlx.loader import resolve_model

    return resolve_model(model)


def _print(record) -> None:
    d = record.data  # its result dataclass (engine/inside/inside_results.py)
    where = "the prompt" if record.step is None else f"step {record.step}"
    if d.truncated:  # the header says that only the context's end was read
        where += f" · only the last {len(record.ids):,} of its {d.context_tokens:,} tokens"
    if record.what in ("journey", "position"):
        from engine.cli.journey_text import print_journey, print_position

        (print_journey if record.what == "journey" else print_position)(record, where)
        return
    if record.what == "attention":
        head = "mean of heads" if d.head is None else f"head {d.head}"
        print(f"attention · layer {d.layer} of {record.layers} · {head} · {where}")
        row = d.weights[-1]
        best = sorted(range(len(row)), key=lambda j: -row[j])[:8]
        print(f"query {record.labels[-1]!r} attends to:")
        for j in best:
            print(f"  {row[j]:.3f}  {record.labels[j]!r} (position {j})")
        return
    print(f"logit lens · {where} · {record.layers} layers")
    for n, row in enumerate(d.rows):
        top = ", ".join(f"{d.label(i)!r} {p:.2f}" for i, p in row.top[:3])
        extra = ""
        if row.chosen_rank is not None:
            extra = f"  chosen: rank {row.chosen_rank}, p={row.chosen_prob:.3f}"
        print(f"  layer {n:2}: {top}{extra}")
