"""`logitscope lab speculative`: speculative decoding measured against the target
alone, in one run (the speed-up, or the slow-down, as a ratio)."""

from __future__ import annotations

import json

from engine.errors import SettingsError
from engine.settings import BIT_WIDTHS


def cmd_speculative(args) -> int:
    import mlx.nn as nn

    from engine.backends.mlx.lab_speculative import plain_greedy, speculative_greedy
    from engine.backends.mlx.loader import load_model, resolve_model
    from engine.cli.args import read_prompt
    from engine.prompt import encode_prompt
    from engine.settings import SamplingSettings

    if not 1 <= args.k <= 16:
        raise SettingsError("--k (tokens drafted per pass) must be between 1 and 16")
    if not 1 <= args.tokens <= 1024:
        raise SettingsError("--tokens must be between 1 and 1024")
    prompt = read_prompt(args.prompt)
    target_folder = resolve_model(args.model)
    target, _i, _s = load_model(target_folder, prefer="speed")
    if args.draft:
        draft = load_model(resolve_model(args.draft), prefer="speed")[0]
        draft_name = draft_label = str(args.draft)
        if draft.vocab_size != target.vocab_size:
            raise SettingsError(
                "the draft's vocabulary differs from the target's: it must share it"
            )
        draft_model = draft.model
    else:
        if args.draft_bits not in BIT_WIDTHS:
            raise SettingsError("--draft-bits must be 2, 3, 4, 5, 6 or 8")
        draft_model = load_model(target_folder, prefer="speed")[0].model
        nn.quantize(draft_model, group_size=64, bits=args.draft_bits)
        draft_name = f"{args.draft_bits}-bit"
        draft_label = f"the target re-quantized to {args.draft_bits}-bit"
    ids = encode_prompt(target.tokenizer, prompt, SamplingSettings(chat_template=not args.raw)).ids
    eos = set(target.tokenizer.eos_token_ids)
    plain, plain_s = plain_greedy(target.model, ids, args.tokens, eos)
    spec = speculative_greedy(target.model, draft_model, ids, args.k, args.tokens, eos)
    out = {
        "target": target_folder.name, "draft": draft_label, "k": args.k,
        "tokens": spec.tokens, "same_as_target": spec.tokens == plain,
        "drafted": spec.drafted, "accepted": spec.accepted,
        "rejected": spec.drafted - spec.accepted, "acceptance": spec.acceptance,
        "target_passes": len(spec.rounds) + 1, "tokens_per_pass": spec.tokens_per_pass,
        "speculative_s": spec.seconds, "target_alone_s": plain_s,
        "speedup": plain_s / spec.seconds if spec.seconds else None,
        "rounds": [{"drafted": r.drafted, "accepted": r.accepted, "correction": r.correction,
                    "draft_probs": r.draft_probs, "target_probs": r.target_probs}
                   for r in spec.rounds],
    }  # fmt: skip
    if args.json:
        print(json.dumps(out))
        return 0
    text = target.tokenizer.decode(spec.tokens)
    print(f"target {target_folder.name}, draft {draft_name}, k = {args.k}: {text!r}")
    print(
        f"drafted {spec.drafted}, accepted {spec.accepted} ({spec.acceptance:.0%}), "
        f"{out['target_passes']} target passes, {spec.tokens_per_pass:.2f} tokens per pass"
    )
    print(
        f"speculative {spec.seconds:.2f} s vs target alone {plain_s:.2f} s: "
        f"{out['speedup']:.2f}x; output identical to the target's: {out['same_as_target']}"
    )
    return 0
