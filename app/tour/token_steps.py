"""The seven steps of one token, as experiments: one short raw-completion run, then
Inside ▸ The journey of one token at its first step (tokenization, embedding,
attention, feed-forward, vocabulary projection), the temperature chart (sampling)
and the answer (iteration). Every sentence reads the records of what just ran."""

from __future__ import annotations

from app.tour import steps
from app.tour.host import Sentence
from app.tour.steps import pct, quote

JOURNEY_PROMPT = "The cat sat on the mat because it was"
JOURNEY_TOKENS = 4


def journey(host, ctx: dict):
    """The journey's run (reused while the run on screen is it) and its record at step 0."""
    shown = host.shown()
    same = shown is not None and shown.done is not None and shown.prompt == JOURNEY_PROMPT
    if same and not shown.settings.chat_template and shown.settings.temperature == 0:
        ctx["run"] = shown
    else:
        tokens = steps.size(host, JOURNEY_TOKENS, 1)
        yield from steps.run(host, ctx, JOURNEY_PROMPT, max_tokens=tokens)
    yield from steps.inside(host, ctx, 0, "journey", "journey")


def _record(ctx: dict):
    why = steps.missing(ctx)
    if why is None and ctx.get("record") is None:
        why = "Inside the model computed nothing for this run (its window says why)."
    return why, ctx.get("record")


def say_tokenization(ctx: dict) -> Sentence:
    why, rec = _record(ctx)
    if why:
        return Sentence(why)
    tok = rec.data.tokenization
    n = tok.prompt_tokens
    pieces = [label for _i, label, _b in tok.tokens[:n]]
    chars = len(ctx["run"].prompt)
    first = ", ".join(quote(p) for p in pieces[:4])
    return Sentence(
        f"Your {chars}-character prompt became {n} tokens, about {chars / n:.1f} characters "
        f"each; it starts {first}. The model only ever sees their ids.",
        {"characters": chars, "prompt_tokens": n},
    )


def say_embedding(ctx: dict) -> Sentence:
    why, rec = _record(ctx)
    if why:
        return Sentence(why)
    emb = rec.data.embedding
    near_id, cos = emb.neighbours[0]
    label = rec.labels[-1]
    return Sentence(
        f"The last prompt token {quote(label)} is a row of {len(emb.values)} numbers "
        f"(length {emb.norm:.2f}); its nearest neighbour in the table is "
        f"{quote(rec.data.label(near_id))} (cosine {cos:.2f}).",
        {"dimensions": len(emb.values), "norm": emb.norm, "cosine": cos},
    )


def _layer_say(ctx: dict, key: str, what: str) -> Sentence:
    why, rec = _record(ctx)
    if why:
        return Sentence(why)
    rows = [r for r in rec.data.layers if getattr(r, key) is not None]
    if not rows:
        return Sentence(f"This model's layers could not be split into {what} and the rest.")
    top = max(rows, key=lambda r: getattr(r, key))
    mean = sum(getattr(r, key) for r in rows) / len(rows)
    return Sentence(
        f"Over {len(rows)} layers, {what} changed the last token's vector by {pct(mean)} of "
        f"its length on average, most in layer {top.layer} ({pct(getattr(top, key))}).",
        {"layers": len(rows), "mean": mean, "top_layer": top.layer, "top": getattr(top, key)},
    )


def say_attention(ctx: dict) -> Sentence:
    return _layer_say(ctx, "attention", "attention")


def say_feed_forward(ctx: dict) -> Sentence:
    return _layer_say(ctx, "ffn", "the feed-forward")


def say_projection(ctx: dict) -> Sentence:
    why, rec = _record(ctx)
    if why:
        return Sentence(why)
    proj, d = rec.data.projection, rec.data
    top_id, _logit, p = proj.top[0]
    chosen = proj.chosen
    numbers = {"top_prob": p, "chosen_rank": chosen.rank if chosen else None}
    tail = ""
    if chosen:
        tail = f"; the run took {quote(d.label(chosen.token_id))}, rank {chosen.rank}"
    return Sentence(
        f"The final vector was scored against every token of the vocabulary; the best was "
        f"{quote(d.label(top_id))} with {pct(p)}{tail}.",
        numbers,
    )


SAMPLING_PROMPT = "My favourite colour is"
LOW_T, HIGH_T = 0.2, 1.2


def sampling(host, ctx: dict):
    tokens = steps.size(host, 3, 1)
    yield from steps.run(host, ctx, SAMPLING_PROMPT, temperature=0.8, max_tokens=tokens, seed=3)
    if "run" in ctx:
        host.select(0)  # the temperature chart at the first token


def say_sampling(ctx: dict) -> Sentence:
    from engine.run.temperature import probabilities

    why = steps.missing(ctx)
    state = ctx.get("run")
    if why is None and (not state.tokens or not state.tokens[0].top):
        why = "This run reported no candidates for its first token."
    if why:
        return Sentence(why)
    record = state.tokens[0]
    low, high = probabilities(record, [LOW_T, HIGH_T], n=1)[0]
    return Sentence(
        f"For the first token, at T = {LOW_T} the top candidate {quote(record.top[0].text)} "
        f"had {pct(low)}; at T = {HIGH_T} it had {pct(high)}. At T = "
        f"{state.settings.temperature:g} the run drew {quote(record.text)}.",
        {"low": float(low), "high": float(high)},
    )


ITERATION_PROMPT = "Count: one, two, three,"
ITERATION_TOKENS = 8


def iteration(host, ctx: dict):
    tokens = steps.size(host, ITERATION_TOKENS, 3)
    yield from steps.run(host, ctx, ITERATION_PROMPT, max_tokens=tokens)


def say_iteration(ctx: dict) -> Sentence:
    why = steps.missing(ctx)
    if why:
        return Sentence(why)
    state = ctx["run"]
    done = state.done
    n = len(state.tokens)
    if done.finish_reason == "eos":
        end = "it chose its stop token"
    elif done.finish_reason == "length":
        end = f"it reached the limit of {state.settings.max_tokens} tokens"
    else:
        end = f"of {done.finish_reason}"
    return Sentence(
        f"The model ran {n} passes, one token each, every pass reading the {done.prompt_tokens} "
        f"prompt tokens and the answer so far; it stopped because {end}.",
        {"steps": n, "prompt_tokens": done.prompt_tokens},
    )
