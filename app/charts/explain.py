"""What each chart shows, in plain words, tied to the inference step it depicts and
to the current run's own numbers. Pure functions of the run state (no Qt), shown
by each chart's "?" button and tested against the records."""

from __future__ import annotations

import math

from app.session.run_state import RunState
from engine.cost.costs import money
from engine.cost.run_cost import api_label, run_cost
from engine.display.units import fmt_or_na, fmt_prob, human_bytes
from engine.run import temperature as temp_curve
from engine.run.series import streaming_figures

EMPTY = "Run a prompt to see this chart with real numbers."


def _nats(h: float | None) -> str:
    return "not reported" if h is None else f"{h:.2f} nats"


def _pct(p: float | None) -> str:
    return "not recorded" if p is None else fmt_prob(p)  # the one way views write a p


def distribution(state: RunState, temperature: float) -> str:
    lead = (
        "Next-token distribution. At every step the model scores every token in its "
        "vocabulary; a softmax turns the scores into probabilities. Blue bars: the "
        "model's own probabilities (T = 1). Orange bars: the distribution the token "
        "was actually drawn from, after the repetition penalty, top-k / top-p / min-p "
        "and temperature. The triangle marks the token chosen."
    )
    rec = state.current
    if rec is None:
        return f"{lead}\n\n{EMPTY}"
    s = state.settings
    return (
        f"{lead}\n\nAt step {rec.step} the model gave {rec.label!r} {_pct(rec.prob)}; "
        f"sampling at T = {s.temperature:g} (top-p {s.top_p:g}, top-k {s.top_k or 'off'}) "
        f"made it {_pct(rec.sampled_prob_of(rec.token_id))}. The model's uncertainty "
        f"here was {_nats(rec.entropy)} of entropy."
    )


def temperature(state: RunState, t: float) -> str:
    lead = (
        "Temperature effect. Sampling divides the model's scores by T before the "
        "softmax: T < 1 sharpens the distribution towards the top token (T = 0 always "
        "takes it), T > 1 flattens it. The curves are this step's top candidates as T "
        "goes from 0 to 2; the dotted line is the entropy. Moving the temperature "
        "slider redraws this without running the model again."
    )
    rec = state.current
    if rec is None or not temp_curve.has_sweep(rec):
        return f"{lead}\n\n{EMPTY}"
    p_t = float(temp_curve.probabilities(rec, [t], 1)[0, 0])
    h_t = float(temp_curve.entropy(rec, [t])[0])
    p_1 = math.exp(rec.top[0].logprob)
    return (
        f"{lead}\n\nAt step {rec.step} the top candidate {rec.top[0].text!r} has "
        f"{_pct(p_1)} at T = 1 and {_pct(p_t)} at T = {t:.2f}, where the entropy is "
        f"{h_t:.2f} nats."
    )


def timeline(state: RunState, _t: float = 0.0) -> str:
    lead = (
        "Probability timeline. Top: the probability the model gave each chosen "
        "token, step by step. Bottom: the entropy of each step's distribution — low "
        "when the model is sure, high where many continuations compete."
    )
    if not state.n:
        return f"{lead}\n\n{EMPTY}"
    probs = [t.prob for t in state.tokens]
    if any(p is None for p in probs):
        return f"{lead}\n\nThis run's server did not report the probabilities of its tokens."
    own = [i for i, t in enumerate(state.tokens) if not t.forced]  # the model's choices
    if not own:
        return f"{lead}\n\nEvery token of this run was chosen by you."
    low = min(own, key=probs.__getitem__)
    mean = sum(probs[i] for i in own) / len(own)
    forced = state.n - len(own)
    note = f" (the model's own choices: {forced} chosen by you left out)" if forced else ""
    return (
        f"{lead}\n\nThis run: {state.n} steps, mean probability {_pct(mean)}{note};"
        f" the least confident step was {low} ({state.tokens[low].label!r} at "
        f"{_pct(probs[low])})."
    )


def throughput(state: RunState, _t: float = 0.0) -> str:
    lead = (
        "Throughput. Prefill (shaded) reads the whole prompt in one batched pass: it is "
        "limited by arithmetic. Decode then makes one token per pass over all the "
        "weights: it is limited by memory bandwidth. TTFT, the time to the first "
        "token, is the request plus the prefill. The curve is tokens/s over the last "
        "8 steps."
    )
    d = state.done
    if d is None and not state.n:
        return f"{lead}\n\n{EMPTY}"
    if d is None:
        _ttft, rate = streaming_figures(state.tokens, state.branch)  # a branch's own steps
        return f"{lead}\n\nSo far: decode {fmt_or_na(rate, '.1f', 'tok/s')}."
    return (
        f"{lead}\n\nThis run: TTFT {fmt_or_na(d.ttft_s, '.2f', 's')}, prefill "
        f"{fmt_or_na(d.prefill_tps, '.1f', 'tok/s')} over "
        f"{fmt_or_na(d.prompt_tokens, 'd', 'prompt tokens')},"
        f" decode {fmt_or_na(d.decode_tps, '.1f', 'tok/s')}.{_source(d)}{cost_section(d)}"
    )


def cost_section(d) -> str:
    """The run's Cost paragraph: energy and how it was found, money, the same tokens hosted."""
    rc = run_cost(d)
    if rc.energy_j is None:
        head = "This run's energy is not known: a server's machine is not this one."
    else:
        how = (
            "measured by the machine's energy counter"
            if (rc.energy_source or "").startswith("measured")
            else f"{rc.energy_source}: the run's {d.elapsed_s:.2f} s x that typical power "
            "(set your own watts in View ▸ Cost settings)"
        )
        per = f"{rc.j_per_token:.2g} J per generated token" if rc.j_per_token else "no token"
        wh = f" ({rc.wh_per_1000:.2g} Wh per 1,000 tokens)" if rc.wh_per_1000 else ""
        head = (
            f"Energy {rc.energy_j:.3g} J, {how}; {per}{wh}; "
            f"electricity {money(rc.cost, rc.currency)}."
        )
    hosted = "; ".join(f"{api_label(p)} {money(c, p.currency)}" for p, c in rc.api)
    tail = f" The same {d.prompt_tokens} prompt and {d.generated_tokens} output tokens: {hosted}."
    return f"\n\nCost. {head}" + (tail if hosted and d.prompt_tokens is not None else "")


def _source(d) -> str:
    if d.timings_from == "server":
        return " Speeds are the server's own figures."
    if d.timings_from == "client":
        return (
            " This server reports no timings: TTFT and the curve are as received here, "
            "network included."
        )
    return ""


def context(state: RunState, _t: float = 0.0) -> str:
    lead = (
        "Context window. Everything the model attends to — the template's system part, "
        "your prompt and the answer so far — must fit in its context window. The top "
        "bar is the whole window to scale; the bottom bar stretches the used part to "
        "full width so small parts stay visible. Each token's keys and values are kept "
        "in the KV cache, which grows with every token."
    )
    ctx = (state.model.context_length or 0) if state.model else 0
    if state.remote and not (ctx and state.prompt_tokens):
        return f"{lead}\n\nThis run's server did not report its context window or prompt size."
    if not ctx or not (state.prompt_tokens or state.n):
        return f"{lead}\n\n{EMPTY}"
    used = state.prompt_tokens + state.output_steps
    kv = state.done.kv_cache_bytes if state.done else None
    kv_text = f"; the KV cache holds {human_bytes(kv)}" if kv is not None else ""
    return (
        f"{lead}\n\nThis run uses {used:,} of {ctx:,} tokens ({used / ctx:.1%}): "
        f"{state.system_tokens:,} system, {state.prompt_tokens - state.system_tokens:,} "
        f"prompt, {state.output_steps:,} output{kv_text}."
    )


EXPLAIN = {
    "dist": distribution,
    "temp": temperature,
    "timeline": timeline,
    "throughput": throughput,
    "context": context,
}
