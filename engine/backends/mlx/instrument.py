"""Per-step sampling and instrumentation, computed on the device.

`make_step_sampler(settings)` returns a function from one step's logits to the
sampled token and one small packed float32 vector of statistics: chosen-token
logprobs, entropies, the top-n candidates of the raw and the sampled-from
distributions and a temperature sweep. Only that vector (about a hundred
floats) crosses to Python per token, so instrumenting costs almost nothing.

The sampled-from distribution follows mlx-lm exactly: repetition penalty on the
logits, then top-p, min-p and top-k masks computed on the T=1 log-probabilities,
then softmax(masked / T). T=0 is greedy (a one-hot distribution).
"""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx
from mlx_lm.sample_utils import apply_min_p, apply_top_k, apply_top_p

from engine.run.records import SWEEP_TEMPERATURES, TopToken, token_label
from engine.run.settings import DEFAULT_REPETITION_CONTEXT, SamplingSettings

NEG_INF = float("-inf")


@dataclass(frozen=True)
class StepStats:
    """Unpacked statistics of one step (plain Python values)."""

    token_id: int
    logprob: float
    sampled_logprob: float
    entropy: float
    sampled_entropy: float
    top_ids: list[int]
    top_logprobs: list[float]
    sampled_top_ids: list[int]
    sampled_top_logprobs: list[float]
    sampled_probs: list[float]  # sampled-from probability of each raw top candidate
    sweep_logz: list[float]
    sweep_entropy: list[float]


def normalise(logits: mx.array) -> tuple[mx.array, mx.array]:
    """log_softmax of a (V,) vector and its entropy in nats, in one exp pass."""
    shifted = logits - mx.max(logits)
    e = mx.exp(shifted)
    z = mx.sum(e)
    logz = mx.log(z)
    ent = logz - mx.sum(mx.where(e > 0, e * shifted, 0.0)) / z
    return shifted - logz, ent


_normalise = mx.compile(normalise)


def top_n(logprobs: mx.array, n: int) -> tuple[mx.array, mx.array]:
    """Indices and values of the n largest entries of a (V,) vector, largest first."""
    idx = mx.argpartition(-logprobs, kth=n - 1)[:n]  # (n,)
    vals = logprobs[idx]
    order = mx.argsort(-vals)
    return idx[order], vals[order]


def temperature_sweep(logprobs: mx.array) -> tuple[mx.array, mx.array]:
    """log Z(T) and entropy H(T) of softmax(logprobs / T) for every sweep T (MLX)."""
    temps = mx.array(SWEEP_TEMPERATURES, dtype=mx.float32)[:, None]  # (G, 1)
    scaled = logprobs[None, :] / temps  # (G, V)
    logz = mx.logsumexp(scaled, axis=-1)  # (G,)
    p = mx.exp(scaled - logz[:, None])  # (G, V)
    ent = logz - mx.sum(p * scaled, axis=-1)  # (G,)
    return logz, ent


def named_filters(settings: SamplingSettings) -> list[tuple[str, object]]:
    """The mlx-lm masks active for these settings, named, in the order mlx-lm's
    `make_sampler` chains them: top-p, min-p, top-k (all on T=1 log-probabilities)."""
    filters = []
    if 0 < settings.top_p < 1.0:
        filters.append(("top-p", lambda x: apply_top_p(x, settings.top_p)))
    if settings.min_p > 0:
        filters.append(("min-p", lambda x: apply_min_p(x, settings.min_p, 1)))
    if settings.top_k > 0:
        filters.append(("top-k", lambda x: apply_top_k(x, settings.top_k)))
    return filters


def make_filters(settings: SamplingSettings):
    """The mlx-lm masks (top-p, min-p, top-k) active for these settings, in order."""
    return [f for _name, f in named_filters(settings)]


def repetition_penalty(logits: mx.array, history: mx.array | None, penalty: float):
    """mlx-lm's sign-aware multiplicative penalty over the last tokens seen."""
    if history is None or history.size == 0:
        return logits
    recent = history[-DEFAULT_REPETITION_CONTEXT:]
    selected = logits[:, recent]
    selected = mx.where(selected < 0, selected * penalty, selected / penalty)
    logits[:, recent] = selected
    return logits


def make_step_sampler(settings: SamplingSettings, vocab_size: int, sweep_on_device: bool):
    """Build `sample(logits (1, V), history, forced) -> (token (1,), packed (P,), raw (V,))`.

    With `sweep_on_device` the temperature sweep is part of `packed`; otherwise
    the caller computes it from `raw` with `temperature_sweep_np`. With `forced`
    (a token id chosen by the person) that token is the step's token and nothing
    is drawn (the random state is left as it was); its statistics are those of
    the distribution it would have been drawn from.
    """
    n = min(settings.top_n, vocab_size - 1)
    filters = make_filters(settings)
    if settings.top_k >= vocab_size:
        filters = filters[:-1]  # top-k is last; a k this large filters nothing
    temp = settings.temperature
    penalty = settings.repetition_penalty

    def sample(logits: mx.array, history: mx.array | None, forced: int | None = None):
        """Draw one token from (1, V) logits (or take `forced`); returns (token,
        packed stats, raw logprobs)."""
        logits = logits.astype(mx.float32)[0]  # (V,)
        raw, raw_h = _normalise(logits)  # (V,), ()
        pen = raw
        if penalty != 1.0:
            pen = repetition_penalty(logits[None], history, penalty)[0]
            pen, _ = _normalise(pen)
        pick = None if forced is None else mx.array([forced], dtype=mx.uint32)
        if temp == 0:
            greedy = mx.argmax(pen, keepdims=True)  # (1,)
            token = greedy if pick is None else pick
            sampled = None  # one-hot on the greedy token: no (V,) work needed
            samp_h = mx.array(0.0)
        else:
            masked = pen[None]
            for f in filters:
                masked = f(masked)
            token = mx.random.categorical(masked / temp) if pick is None else pick  # (1,)
            sampled, samp_h = _normalise(masked[0] / temp)
        top_ids, top_lp = top_n(raw, n)
        if sampled is None:  # greedy: the argmax first, the rest impossible
            s_ids = mx.concatenate([greedy.astype(top_ids.dtype), top_ids[: n - 1]])
            s_lp = mx.concatenate([mx.zeros((1,)), mx.full((n - 1,), NEG_INF)])
            chosen_sampled = mx.where(greedy[0] == token[0], 0.0, NEG_INF)
            top_sampled = (top_ids == greedy[0]).astype(mx.float32)  # (n,) one-hot
        elif penalty != 1.0:
            s_ids, s_lp = top_n(sampled, n)
            chosen_sampled = sampled[token[0]]
        else:  # same ranking as raw: temperature and masks keep the order
            s_ids, s_lp = top_ids, sampled[top_ids]
            chosen_sampled = sampled[token[0]]
        if sampled is not None:
            top_sampled = mx.exp(sampled[top_ids])  # (n,) 0 where a filter removed it
        parts = [
            token.astype(mx.float32),
            mx.stack([raw[token[0]], chosen_sampled, raw_h, samp_h]),
            top_ids.astype(mx.float32),
            top_lp,
            s_ids.astype(mx.float32),
            s_lp,
            top_sampled,
        ]
        if sweep_on_device:
            parts.extend(temperature_sweep(raw))
        return token, mx.concatenate(parts), raw

    sample.n = n
    return sample


def unpack(values: list[float], n: int) -> StepStats:
    """Turn the packed vector (as a Python list) back into named statistics."""
    g = len(SWEEP_TEMPERATURES)
    i = 5
    top_ids = [int(v) for v in values[i : i + n]]
    top_lp = values[i + n : i + 2 * n]
    s_ids = [int(v) for v in values[i + 2 * n : i + 3 * n]]
    s_lp = values[i + 3 * n : i + 4 * n]
    top_sampled = values[i + 4 * n : i + 5 * n]
    j = i + 5 * n
    return StepStats(
        token_id=int(values[0]),
        logprob=values[1],
        sampled_logprob=values[2],
        entropy=values[3],
        sampled_entropy=values[4],
        top_ids=top_ids,
        top_logprobs=top_lp,
        sampled_top_ids=s_ids,
        sampled_top_logprobs=s_lp,
        sampled_probs=top_sampled,
        sweep_logz=values[j : j + g],
        sweep_entropy=values[j + g : j + 2 * g],
    )


def candidates(ids: list[int], logprobs: list[float], bytes_of) -> tuple[TopToken, ...]:
    """TopToken tuple (text shown as bytes where not whole UTF-8), dropping
    candidates the filters removed (-inf)."""
    out = []
    for i, lp in zip(ids, logprobs, strict=False):
        if lp != NEG_INF:
            raw = bytes_of(i)
            out.append(TopToken(i, token_label(raw), lp, tuple(raw)))
    return tuple(out)
