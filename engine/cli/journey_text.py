"""Plain-text printing of `logitscope inspect --what journey|position` (the JSON is
the record itself; this is the short human reading of the same numbers)."""

from __future__ import annotations

from engine.display.units import fmt_prob


def _pct(x: float | None) -> str:
    return "—" if x is None else fmt_prob(x)  # the one way views write a p


def print_journey(record, where: str) -> None:
    """The seven sections of one step, a few lines each."""
    d = record.data  # a JourneyResult
    tok = d.tokenization
    print(f"journey of one token · {where} · {record.layers} layers")
    print(f"1 tokenization: {len(tok.tokens)} tokens ({tok.prompt_tokens} of the prompt)")
    if tok.new is not None:
        tid, label, raw = tok.tokens[tok.new]
        print(f"  new token {label!r} (id {tid}, bytes {list(raw)})")
    emb = d.embedding
    near = ", ".join(f"{d.label(i)!r} {c:.3f}" for i, c in emb.neighbours)
    print(f"2 embedding of {record.labels[-1]!r}: {len(emb.values)} values, norm {emb.norm:.3f}")
    print(f"  nearest by cosine: {near}")
    print("3-4 residual stream: ‖Δh‖/‖h‖ of attention and feed-forward per layer")
    for row in d.layers:
        att, ffn = row.attention, row.ffn
        both = "not separable" if att is None else f"attention {att:.3f}  feed-forward {ffn:.3f}"
        print(f"  layer {row.layer:2}: ‖h‖ {row.norm_in:9.2f}  {both}")
    proj = d.projection
    top = ", ".join(f"{d.label(i)!r} {p:.3f}" for i, _l, p in proj.top[:5])
    print(f"5 vocabulary projection: {top}")
    if proj.chosen:
        c = proj.chosen
        label = d.label(c.token_id)
        print(f"  chosen {label!r}: logit {c.logit:.3f}, p {c.prob:.4f}, rank {c.rank}")
    print(f"6 sampling ({d.sampling.order}):")
    for s in d.sampling.stages:
        rank = "removed" if s.chosen_rank is None else f"rank {s.chosen_rank}"
        chosen = "" if s.chosen_prob is None else f"  chosen {_pct(s.chosen_prob)} {rank}"
        print(f"  {s.stage:<20} {s.tokens:>7} tokens  mass {_pct(s.mass)}{chosen}")
    it = d.iteration
    end = "stop token" if it.stop_token else "length limit" if it.length_limit else "goes on"
    print(
        f"7 iteration: context {it.context_tokens:,} of {it.context_length:,} tokens, "
        f"KV cache +{it.kv_bytes_added:,} bytes, {end}"
    )
    if it.kv_layers_full:
        print(f"  {it.kv_layers_full} sliding-window layers full: they overwrite, adding nothing")


def print_position(record, where: str) -> None:
    """Attention mass per bin along the context, averaged over layers."""
    d = record.data  # a PositionResult
    n = len(d.mean)
    print(f"attention by position · {where} · query {record.labels[-1]!r} · {n} positions")
    for name, mass in d.bins.items():
        a, b = d.edges[name]
        print(f"  {name:<12} positions {a:>4}–{max(a, b - 1):<4} {_pct(mass)}")
    top = sorted(range(n), key=lambda j: -d.mean[j])[:5]
    print(
        "  most attended: " + ", ".join(f"{record.labels[j]!r}@{j} {_pct(d.mean[j])}" for j in top)
    )
