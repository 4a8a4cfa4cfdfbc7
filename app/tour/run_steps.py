"""Lessons on whole runs: the same prompt's different answers (Sample N), a token that
cannot be revised (a branch), where attention goes (Inside ▸ attention by position),
prefill against decode, thinking tokens and what a token costs (confidently wrong,
Read a text, is app/tour/read_steps.py). Every sentence reads the records of what
just ran."""

from __future__ import annotations

import math

from app.tour import steps
from app.tour.host import Sentence
from app.tour.steps import pct, quote

SAMPLE_PROMPT = "My favourite fruit is"  # raw: a server's chat answer cannot be branched
SAMPLE_N, SAMPLE_T, SAMPLE_TOKENS = 4, 1.0, 4


def sample_n(host, ctx: dict):
    tokens, ctx["n"] = steps.size(host, SAMPLE_TOKENS, 2), steps.size(host, SAMPLE_N, 2)
    yield from steps.run(host, ctx, SAMPLE_PROMPT, max_tokens=tokens)
    if "run" not in ctx:
        return
    if not host.sample(0, ctx["n"], SAMPLE_T, 11):
        ctx["failed"] = "Sample N did not start: the playground says why."
        return
    yield host.idle
    ctx["samples"] = host.samples()


def say_sample_n(ctx: dict) -> Sentence:
    why = steps.missing(ctx)
    if why:
        return Sentence(why)
    answers = [s.text for s in ctx.get("samples", []) if s.done is not None]
    distinct = len(set(answers))
    return Sentence(
        f"From the same prompt, {len(answers)} samples at T = {SAMPLE_T:g} gave {distinct} "
        f"different answers (the greedy one was {quote(ctx['run'].text)}).",
        {"samples": len(answers), "distinct": distinct},
    )


BRANCH_PROMPT = "The best season of the year is"
BRANCH_STEP, BRANCH_TOKENS = 1, 6


def branch(host, ctx: dict):
    tokens = steps.size(host, BRANCH_TOKENS, BRANCH_STEP + 2)
    yield from steps.run(host, ctx, BRANCH_PROMPT, max_tokens=tokens)
    state = ctx.get("run")
    if state is None or len(state.tokens) <= BRANCH_STEP:
        return
    record = state.tokens[BRANCH_STEP]
    alt = next((c for c in record.top if c.token_id != record.token_id), None)
    if alt is None or not host.branch(BRANCH_STEP, alt.token_id):
        ctx["failed"] = "The branch did not start: the playground says why."
        return
    ctx["alternative"] = alt
    yield host.idle
    ctx["branch"] = host.shown()


def say_branch(ctx: dict) -> Sentence:
    why = steps.missing(ctx)
    if why is None and ctx.get("branch") is None:
        why = "The answer was too short to branch at step 1; run it with more tokens."
    if why:
        return Sentence(why)
    parent, child, k = ctx["run"], ctx["branch"], BRANCH_STEP
    chose, alt = parent.tokens[k], ctx["alternative"]
    p_alt = 2.718281828459045**alt.logprob
    return Sentence(
        f"At step {k} the model wrote {quote(chose.text)} ({pct(chose.prob)}). Forcing its "
        f"runner-up {quote(alt.text)} ({pct(p_alt)}) kept the {k} token(s) before it and "
        f"changed everything after: {quote(parent.text)} became {quote(child.text)}.",
        {"step": k, "chosen": chose.prob, "alternative": p_alt},
    )


POSITION_PROMPT = (
    "Notes from the meeting. The budget is due on Friday. Maria will book the room. "
    "The printer on the second floor is broken again. Lunch is at noon. The new intern "
    "starts on Monday. Question: when is the budget due? Answer:"
)


def position(host, ctx: dict):
    yield from steps.run(host, ctx, POSITION_PROMPT, max_tokens=steps.size(host, 2, 1))
    yield from steps.inside(host, ctx, 0, "position", "position")


def say_position(ctx: dict) -> Sentence:
    why = steps.missing(ctx)
    if why is None and ctx.get("record") is None:
        why = "Inside the model computed nothing for this run (its window says why)."
    if why:
        return Sentence(why)
    result = ctx["record"].data  # a PositionResult (engine/inside/inside_results.py)
    share, size = {}, {}
    for key, name in (("first", "first token"), ("middle", "middle"), ("last", "last 10%")):
        a, b = result.edges[name]
        share[key], size[key] = result.bins[name], b - a
    total = result.edges["last 10%"][1]
    a, b = result.edges["first 10%"]  # the rest of the first 10 %: named, so all add up
    share["start"], size["start"] = result.bins["first 10%"], b - a
    numbers = {**share, "tokens": total}
    if not size["middle"] or not size["last"]:
        return Sentence(
            f"The context was only {total} tokens, too short to have a middle apart from its "
            f"ends; the very first token got {pct(share['first'])} of the last token's "
            "attention.",
            numbers,
        )
    each = {k: share[k] / size[k] for k in share if size[k]}
    numbers.update({f"{k}_each": v for k, v in each.items()})
    start = (
        f"the rest of the first 10 % ({size['start']} tokens) {pct(share['start'])}, "
        if size["start"]
        else ""
    )
    return Sentence(
        f"Averaged over layers, the last token gave the very first token {pct(share['first'])} "
        f"of its attention, {start}the last 10 % ({size['last']} tokens) "
        f"{pct(share['last'])} and the middle ({size['middle']} tokens) "
        f"{pct(share['middle'])}. Per token that is "
        f"{_fine(each['first'])}, {_fine(each['last'])} and {_fine(each['middle'])}, against "
        f"{_fine(1 / total)} spread evenly over all {total}: {_position_verdict(each)}",
        numbers,
    )


def _fine(share: float) -> str:
    """A small share of attention with two significant digits ("0.74 %")."""
    return f"{100 * share:.2g} %"


def _position_verdict(each: dict) -> str:
    """What the per-token shares (first token, last 10 %, middle) show, and only that."""
    if each["first"] > max(each["middle"], each["last"]):
        sink = "the first token drew the most of all (the attention sink)"
    else:
        rival = "a middle token" if each["middle"] >= each["last"] else "a last-10 % token"
        sink = f"no attention sink shows here ({rival} drew at least as much as the first)"
    if each["middle"] < min(each["first"], each["last"]):
        return f"per token the middle got the least, so a fact there is easiest to lose; {sink}."
    names = {"first": "the first token", "last": "a last-10 % token"}
    above = " and ".join(names[k] for k in ("first", "last") if each["middle"] >= each[k])
    return f"here the middle was not lost (a middle token got at least as much as {above}); {sink}."


PREFILL_PROMPT = POSITION_PROMPT
PREFILL_TOKENS = 8


def prefill(host, ctx: dict):
    tokens = steps.size(host, PREFILL_TOKENS, 3)  # decode needs a few tokens to be timed
    yield from steps.run(host, ctx, PREFILL_PROMPT, max_tokens=tokens, cold=True)
    yield from steps.inside(host, ctx, None, "hardware")


def say_prefill(ctx: dict) -> Sentence:
    why = steps.missing(ctx)
    if why:
        return Sentence(why)
    d = ctx["run"].done
    if not d.prefill_tps or not d.decode_tps:
        return Sentence("This run reported no prefill or decode speed.")
    ratio = d.prefill_tps / d.decode_tps
    pace = (
        f"{ratio:,.0f}× slower"
        if ratio >= 1.5
        else f"hardly slower (prefill ×{ratio:.2f} as fast): {d.prompt_tokens} prompt tokens "
        "were too few for reading them together to pull ahead"
    )
    return Sentence(
        f"The {d.prompt_tokens} prompt tokens were read together at {d.prefill_tps:,.0f} "
        f"tokens/s; the answer came one token at a time at {d.decode_tps:,.1f} tokens/s, "
        f"{pace}.",
        {"prefill_tps": d.prefill_tps, "decode_tps": d.decode_tps},
    )


THINK_PROMPT = "What is 17 + 25? Think step by step."


def thinking(host, ctx: dict):
    tokens = steps.size(host, 12, 4)
    yield from steps.run(host, ctx, THINK_PROMPT, mode="chat", max_tokens=tokens)


def say_thinking(ctx: dict) -> Sentence:
    why = steps.missing(ctx)
    if why:
        return Sentence(why)
    state = ctx["run"]
    n, total = sum(t.thinking for t in state.tokens), len(state.tokens)
    name = state.model.name if state.model else "This model"
    where = " (on a server)" if state.remote else ""
    if not n:
        return Sentence(
            f"{name}{where} wrote 0 thinking tokens out of {total}: it is not a thinking "
            "model. Load one that thinks (Qwen3 or DeepSeek-R1, say, on a server) to see its "
            "reasoning in its own block above the answer.",
            {"thinking": 0, "tokens": total},
        )
    if n == total:
        return Sentence(
            f"{name}{where} spent all {n} tokens of this short run thinking and stopped before "
            "answering: tokens you wait and pay for, shown in their own block.",
            {"thinking": n, "tokens": total},
        )
    return Sentence(
        f"{name}{where} thought for {n} of its {total} tokens ({pct(n / total)}) before "
        "answering: tokens you wait and pay for, shown in their own block above the answer.",
        {"thinking": n, "tokens": total},
    )


COST_PROMPT = "Say hello in French."


def cost(host, ctx: dict):
    yield from steps.run(host, ctx, COST_PROMPT, mode="chat", max_tokens=steps.size(host, 6, 2))


def say_cost(ctx: dict) -> Sentence:
    from engine.cost.costs import DEFAULT_CURRENCY, DEFAULT_PRICE_PER_KWH, J_PER_KWH, money

    why = steps.missing(ctx)
    if why:
        return Sentence(why)
    d = ctx["run"].done
    if d.energy_j is None:
        return _say_server_cost(d)
    per = d.energy_j / max(d.generated_tokens, 1)
    numbers = {"energy_j": d.energy_j, "per_token": per, "seconds": d.elapsed_s}
    price = ""
    if d.cost is not None and d.energy_j > 0:
        kwh = d.cost / (d.energy_j / J_PER_KWH)  # the price the engine applied to this run
        numbers["price_per_kwh"] = kwh
        rate = f"{kwh:.4g} {d.cost_currency} per kWh"
        default = math.isclose(kwh, DEFAULT_PRICE_PER_KWH, rel_tol=1e-9)
        if default and d.cost_currency == DEFAULT_CURRENCY:
            whose = f"the default price of {rate} (View ▸ Cost settings… sets yours)"
        else:
            whose = f"your price of {rate}"
        price = f", {money(d.cost, d.cost_currency)} at {whose}"
    return Sentence(
        f"This run's {d.prompt_tokens} prompt and {d.generated_tokens} answer tokens took "
        f"{d.elapsed_s:.2f} s and {d.energy_j:.3g} J ({d.energy_source}), ≈ {per:.2g} J "
        f"per answer token{price}.",
        numbers,
    )


def _say_server_cost(d) -> Sentence:
    """A server reports no energy: its time per token, and the tokens at an API's price."""
    from engine.cost.costs import money
    from engine.cost.run_cost import api_label, run_cost

    per = d.elapsed_s / max(d.generated_tokens, 1)
    priced = [(p, c) for p, c in run_cost(d).api if c is not None]
    price = ""
    if priced:
        p, c = priced[0]
        price = f"; {api_label(p)} the same tokens would cost {money(c, p.currency)}"
    return Sentence(
        f"This run's {d.prompt_tokens} prompt and {d.generated_tokens} answer tokens took "
        f"{d.elapsed_s:.2f} s on the server, ≈ {1000 * per:.0f} ms per answer token{price}. "
        "A server does not report its energy: a local model's run shows it.",
        {"seconds": d.elapsed_s, "per_token_s": per, "api": priced[0][1] if priced else None},
    )
