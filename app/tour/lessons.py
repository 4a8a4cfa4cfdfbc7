"""The tour's lessons, in the order of issue 41: the one place their texts live (the
tour panel and the docs read them from here; `as_markdown()` writes the docs' page).

Each lesson: a title, two to four plain sentences, where its view is (`target`), an
experiment `show_me(host, ctx)` that sets up and runs it on the loaded model (a
generator of predicates, app/tour/steps.py) and `sentence(ctx)` computed from what ran.
Qt-free: a unit test walks the list without a window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.tour import lab_steps as lab
from app.tour import read_steps as reads
from app.tour import route_steps as route
from app.tour import run_steps as runs
from app.tour import token_steps as tok


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    text: str
    target: str  # window.view[:detail] the shell highlights (app/shell/tour_wiring.py)
    show_me: Callable  # (host, ctx) -> generator of predicates
    sentence: Callable  # (ctx) -> Sentence
    needs_local: bool = False  # Inside and the Lab read the weights: a local model


def _l(key, title, text, target, show_me, sentence, local=False) -> Lesson:
    return Lesson(key, title, " ".join(text.split()), target, show_me, sentence, local)


LESSONS: tuple[Lesson, ...] = (
    _l("tokenization", "A token’s journey, 1: tokenization",
       """The model never sees letters. Your text is cut
       into tokens, pieces from a fixed vocabulary, and each becomes a number. Common words are
       one token; rare words and other languages take several.""",
       "inside.journey:Tokenization", tok.journey, tok.say_tokenization, True),
    _l("embedding", "A token’s journey, 2: embedding",
       """Each token id picks one row of a big table: a vector of
       a few hundred numbers. Tokens used alike end up with vectors pointing alike.""",
       "inside.journey:Embedding", tok.journey, tok.say_embedding, True),
    _l("attention", "A token’s journey, 3: attention",
       """In every layer, attention lets the newest token read the
       tokens before it and add what it finds to its own vector. This is the only place where
       tokens exchange information.""",
       "inside.journey:Attention", tok.journey, tok.say_attention, True),
    _l("feed_forward", "A token’s journey, 4: feed-forward",
       """After attention, each layer's feed-forward network
       transforms the token's vector on its own. Most of the model's weights, and much of what
       it knows, sit here.""",
       "inside.journey:Attention", tok.journey, tok.say_feed_forward, True),
    _l("projection", "A token’s journey, 5: vocabulary projection",
       """The last vector is compared with every
       token of the vocabulary, giving one score each. Softmax turns the scores into
       probabilities that add up to one.""",
       "inside.journey:Vocabulary", tok.journey, tok.say_projection, True),
    _l("sampling", "A token’s journey, 6: sampling and temperature",
       """One token is drawn from those
       probabilities. Temperature reshapes them first: low values make the top token
       near-certain, high values flatten the field. Top-k, top-p and min-p cut the tail.""",
       "playground.temperature", tok.sampling, tok.say_sampling),
    _l("iteration", "A token’s journey, 7: iteration until a stop token",
       """The chosen token is appended and the
       whole step repeats, one token per pass, until the model picks its stop token or reaches
       the length limit. An answer is this loop, nothing more.""",
       "playground.answer", tok.iteration, tok.say_iteration),
    _l("sample_n", "Why the same prompt gives different answers", """With a temperature above
       zero each step is a draw, and one different draw changes everything after it. Sample N
       runs the same start several times with different seeds.""",
       "playground.branches", runs.sample_n, runs.say_sample_n),
    _l("branches", "Why a model cannot revise a token", """Each token, once drawn, becomes part
       of the input for every later step: the model only ever adds. A branch shows what would
       have followed had another token been chosen.""",
       "playground.branches", runs.branch, runs.say_branch),
    _l("read", "Why it can be confidently wrong", """A model scores how likely text is, not
       whether it is true. Read a text feeds a sentence through the model and shows the
       probability it gave each token. The lesson reads a few fluent false statements, each
       beside its true counterpart, and shows the pair where the false one fared best. Then
       the Lab's Confidence tab asks it a few questions and names its most confident wrong
       answer.""",
       "playground.answer", reads.read_pairs, reads.say_read),
    _l("position", "Why the start matters and the middle gets lost", """Attention is not spread
       evenly. Much of it lands on the very first token (the attention sink) and on the most
       recent ones; facts in the middle of a long prompt get the least.""",
       "inside.position", runs.position, runs.say_position, True),
    _l("prefill", "Prefill and decode", """The prompt is read in one parallel pass (prefill);
       the answer comes one token per pass (decode). Prefill is limited by arithmetic, decode
       by how fast the weights can be read from memory.""",
       "inside.hardware", runs.prefill, runs.say_prefill, True),
    _l("kv_cache", "The KV cache and context limits", """Each layer keeps the keys and values of
       every token so far, so a new token does not recompute the past. The cache grows with
       every token; the context length is how many it may hold.""",
       "lab.cache", lab.cache, lab.say_cache, True),
    _l("quantization", "Quantization", """Storing weights in fewer bits makes the model smaller
       and decoding faster, at the price of slightly different probabilities. The Lab measures
       how different, token by token.""",
       "lab.quant", lab.quant, lab.say_quant, True),
    _l("distillation", "Distillation", """A small student model can be trained to copy a big
       teacher's whole distribution (soft targets), not just its top choice. It learns more per
       example than from hard labels.""",
       "lab.distill", lab.distill, lab.say_distill, True),
    _l("speculative", "Speculative decoding", """A small draft model guesses a few tokens; the
       big model checks them all in one pass and keeps those it agrees with. The answer is the
       same as the big model's own; only the time changes.""",
       "lab.speculative", lab.speculative, lab.say_speculative, True),
    _l("batching", "Caching and batching", """Servers keep prompts they have seen in cache and
       decode many requests together. Each pass reads the weights once for the whole batch, so
       total throughput grows while each request's speed drops.""",
       "lab.batch", lab.batch, lab.say_batch, True),
    _l("thinking", "Thinking tokens", """Reasoning models write a hidden draft before their
       answer. Those tokens cost the same time and money as the answer's, and Logitscope shows
       them in their own block.""",
       "playground.thinking", runs.thinking, runs.say_thinking),
    _l("cost", "What a token costs", """Every token costs time, energy and, on a hosted API,
       money; the same text costs more tokens in some languages than in others. The status line
       and each chart's ? give this run's figures.""",
       "playground.status", runs.cost, runs.say_cost),
    _l("routing", "Answer with the right-sized model", """A large model is slower and costs
       more, and most questions do not need it. A router lets the small model answer first
       and hands the question to a larger one only when the small one is unsure: here when
       its least likely answer token is below 0.20. The Right-sized button beside the model
       picker does this for every turn.""",
       "playground.right_size", route.route, route.say_route),
)  # fmt: skip


def lesson(key: str) -> Lesson:
    """The lesson named `key`."""
    return next(x for x in LESSONS if x.key == key)


def as_markdown() -> str:
    """The lessons as a Markdown page (the guide's tour page is this text)."""
    lines = [
        "# The tour",
        "",
        "Help ▸ Tour… runs each lesson on the model you loaded. The tour is a guest: its "
        "lessons run from default settings in a History session of their own (*Tour*), "
        "windows they open sit beside its panel, and closing it puts your settings, mode, "
        "prompt, conversation and model back exactly as they were.",
        "",
    ]
    for n, x in enumerate(LESSONS, 1):
        local = " *(needs a local model)*" if x.needs_local else ""
        lines += [f"## Lesson {n}: {x.title}{local}", "", x.text, ""]
    return "\n".join(lines)
