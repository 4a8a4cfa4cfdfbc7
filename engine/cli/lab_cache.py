"""`logitscope lab cache`: a conversation's second turn cold and cached, in one run
(time to first token of each and the ratio)."""

from __future__ import annotations

import json

from engine.errors import SettingsError


def add_parser(kinds) -> None:
    c = kinds.add_parser("cache", help="a conversation turn cold vs from the KV cache")
    c.add_argument("--model", default=None, help="MLX folder, .gguf file or name")
    c.add_argument("--rounds", type=int, default=3, help="alternated rounds of each (best kept)")
    c.add_argument("--tokens", type=int, default=8, help="answer tokens per run")
    c.add_argument("--turns", type=int, default=0,
                   help="also grow a conversation, each turn cached and cold")  # fmt: skip
    c.add_argument("--prompt", default="Why do ships float?", help="the conversation's first turn")
    c.add_argument("--json", action="store_true", help="print the numbers as JSON")


def cmd_cache(args) -> int:
    from engine.backends.mlx.lab_cache import cache_experiment, conversation_experiment
    from engine.backends.mlx.loader import load_model, resolve_model
    from engine.prompt import check_text

    if not 1 <= args.rounds <= 20 or not 1 <= args.tokens <= 256 or not 0 <= args.turns <= 12:
        raise SettingsError("--rounds must be 1-20, --tokens 1-256 and --turns 0-12")
    first = check_text(args.prompt)
    lm = load_model(resolve_model(args.model), prefer="speed")[0]
    out = cache_experiment(lm, tokens=args.tokens, rounds=args.rounds)
    if args.turns:
        out["conversation"] = conversation_experiment(lm, first, args.turns, args.tokens)["rows"]
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"turn 2: {out['prompt_tokens']} prompt tokens, {out['cached_tokens']} from cache")
    print(f"TTFT cold {out['cold_ttft_s']:.3f} s, cached {out['cached_ttft_s']:.3f} s: "
          f"{out['ratio']:.1f}x faster; same tokens: {out['same_tokens']} "
          f"(logprobs within {out['max_logprob_difference']:.1e})")  # fmt: skip
    for r in out.get("conversation", []):
        print(f"turn {r['turn']}: {r['prompt_tokens']} prompt tokens, {r['cached_tokens']} cached; "
              f"TTFT cold {r['cold_ttft_s']:.3f} s, cached {r['cached_ttft_s']:.3f} s "
              f"({r['speedup']:.1f}x); KV cache {r['kv_cache_bytes'] / 1e6:.2f} MB")  # fmt: skip
    return 0
