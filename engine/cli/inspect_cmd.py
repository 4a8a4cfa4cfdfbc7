"""`logitscope inspect`: the numbers the *Inside the model* views show.

    logitscope inspect --prompt TEXT [--model M] [--step N]
                       --what attention|lens|tokens|journey|position
                       [--layer L] [--head H] [--raw] [--system S] [--json]
                       [--temp T --top-p P --sample-top-k K --min-p M --repetition-penalty R]

The sampling options only shape the journey's sampler funnel (what those settings
would do to the step's distribution); the answer inspected is greedy.

With --step N the prompt is first answered greedily for N + 1 tokens (as the
window's run would be at T = 0) and step N of that answer is inspected; without
it, the prompt alone (what it predicts next). An engine that dies or hangs while
answering or inspecting ends the command with one line naming the phase and
exit 1; nothing is printed as if it were a result.
"""

from __future__ import annotations

import json
import sys

from engine.errors import EngineFault, SettingsError, error_for
from engine.settings import SamplingSettings


def add_parser(sub) -> None:
    """Add the `inspect` command."""
    i = sub.add_parser("inspect", help="look inside the model at one step")
    i.add_argument("--prompt", required=True, help="the prompt ('-' reads stdin)")
    i.add_argument("--model", default=None, help="MLX folder, .gguf file or name")
    i.add_argument("--step", type=int, default=None, help="step of the greedy answer")
    i.add_argument(
        "--what",
        required=True,
        choices=["attention", "lens", "tokens", "journey", "position"],
        help="the view: attention, lens, tokens, journey (seven steps), position",
    )
    i.add_argument("--layer", type=int, default=0, help="attention: the layer (0-based)")
    i.add_argument("--head", type=int, default=None, help="attention: the head (default: mean)")
    i.add_argument("--top-k", type=int, default=5, help="lens: predictions kept per layer")
    i.add_argument("--system", default=None, help="system prompt")
    i.add_argument("--raw", action="store_true", help="raw completion, no chat template")
    i.add_argument("--json", action="store_true", help="print the numbers as JSON")
    f = i.add_argument_group("journey: the sampler funnel's settings (the answer stays greedy)")
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
    if args.step is not None and args.step < 0:
        raise SettingsError("--step counts the answer's tokens from 0")
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
    from engine.client import EngineClient

    client = EngineClient()
    request = {
        "what": args.what,
        "step": args.step,
        "layer": args.layer,
        "head": args.head,
        "top_k": args.top_k,
    }
    try:
        record = _result(client.inspect_answer(prompt, settings, request, args.model))
    finally:
        client.close()
    if args.json:
        from engine.records import to_dict

        print(json.dumps(to_dict(record), ensure_ascii=False))
    else:
        _print(record)
    return 0


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
    from engine.models.light_tokenizer import LightTokenizer
    from engine.models.token_explorer import counts_by_model, economy, split, stats

    folder = _folder(args.model)
    tok = LightTokenizer(folder)
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
    d = record.data
    where = "the prompt" if record.step is None else f"step {record.step}"
    if record.what in ("journey", "position"):
        from engine.cli.journey_text import print_journey, print_position

        (print_journey if record.what == "journey" else print_position)(record, where)
        return
    if record.what == "attention":
        head = "mean of heads" if d["head"] is None else f"head {d['head']}"
        print(f"attention · layer {d['layer']} of {record.layers} · {head} · {where}")
        row = d["weights"][-1]
        best = sorted(range(len(row)), key=lambda j: -row[j])[:8]
        print(f"query {record.labels[-1]!r} attends to:")
        for j in best:
            print(f"  {row[j]:.3f}  {record.labels[j]!r} (position {j})")
        return
    labels = d["token_labels"]
    print(f"logit lens · {where} · {record.layers} layers")
    for n, row in enumerate(d["rows"]):
        top = ", ".join(f"{labels[str(i)]!r} {p:.2f}" for i, p in row["top"][:3])
        extra = ""
        if "chosen_rank" in row:
            extra = f"  chosen: rank {row['chosen_rank']}, p={row['chosen_prob']:.3f}"
        print(f"  layer {n:2}: {top}{extra}")
