"""Lessons in the Lab: the KV cache and the context, quantization, distillation,
speculative decoding, caching and batching. Each runs a small experiment on the
loaded model in the Lab's own engine; every sentence reads the experiment's result."""

from __future__ import annotations

from app.tour import steps
from app.tour.host import Sentence
from engine.lab import BatchParams, CacheParams, QuantParams, SpeculativeParams

LAB_PROMPT = "Name a planet."


def _result(ctx: dict):
    if "failed" in ctx:
        return ctx["failed"], None
    if ctx.get("result") is None:
        return "The experiment ended without a result: the Lab says why.", None
    return None, ctx["result"]


def cache(host, ctx: dict):
    params = CacheParams(turns=2, tokens=steps.size(host, 3, 1))
    yield from steps.lab(host, ctx, params, LAB_PROMPT)


def say_cache(ctx: dict) -> Sentence:
    why, r = _result(ctx)
    if why:
        return Sentence(why)
    turn = r.rows[-1]
    per = turn.kv_cache_bytes / turn.kv_cache_tokens if turn.kv_cache_tokens else None
    held = f"{turn.kv_cache_tokens} tokens in {turn.kv_cache_bytes / 1024:,.0f} KiB"
    return Sentence(
        f"Turn {turn.turn} reused {turn.cached_tokens} of its {turn.prompt_tokens} prompt tokens "
        f"from the KV cache: its first token came after {1000 * turn.cached_ttft_s:.0f} ms "
        f"instead of {1000 * turn.cold_ttft_s:.0f} ms cold. The cache held {held}"
        + (f" ({per:,.0f} bytes a token)" if per else "")
        + f"; this context holds at most {r.context_length:,} tokens.",
        {
            "cached_tokens": turn.cached_tokens,
            "prompt_tokens": turn.prompt_tokens,
            "context_length": r.context_length,
        },
    )


QUANT_BITS, QUANT_TOKENS = 3, 4


def quant(host, ctx: dict):
    params = QuantParams((QUANT_BITS,), steps.size(host, QUANT_TOKENS, 2))
    yield from steps.lab(host, ctx, params, LAB_PROMPT)


SLIGHT_KL = 0.1  # nats: below this mean KL the probabilities are only slightly different


def say_quant(ctx: dict) -> Sentence:
    why, r = _result(ctx)
    if why:
        return Sentence(why)
    ref = r.variants[0]
    low = next((v for v in r.variants if v.bits == QUANT_BITS), None)
    if low is None:
        return Sentence(f"The experiment returned no {QUANT_BITS}-bit variant: the Lab says why.")
    agree, steps_n = sum(low.agree), len(low.agree)
    numbers = {"mean_kl": low.mean_kl, "agree": agree, "steps": steps_n}
    numbers.update({"decode": low.decode_tps, "reference_decode": ref.decode_tps})
    if low.mean_kl < SLIGHT_KL:
        damage = "only slightly different, as the lesson says"
    else:
        damage = (
            f"more than slightly different (over {SLIGHT_KL:g} nats), as {QUANT_BITS} bits is "
            "harsh rounding and small models are known to suffer most from it"
        )
    if low.decode_tps > ref.decode_tps:
        speed = f"×{low.decode_tps / ref.decode_tps:.1f} faster"
    else:
        speed = (
            "not faster here: fewer bits pay off only where reading the weights from memory "
            "limits decoding; where arithmetic does (a CPU, say), unpacking the bits costs "
            "more than the smaller read saves"
        )
    return Sentence(
        f"At {QUANT_BITS} bits the weights take {low.weight_bytes / 2**20:,.0f} MiB instead of "
        f"{ref.weight_bytes / 2**20:,.0f} MiB (the reference: {r.reference}). Its "
        f"distributions were {low.mean_kl:.3f} nats (mean KL) from the reference's and its "
        f"top token agreed on {agree} of {steps_n} steps: {damage}. It decoded at "
        f"{low.decode_tps:,.1f} tokens/s against the reference's {ref.decode_tps:,.1f}, "
        f"{speed}.",
        numbers,
    )


def distill(host, ctx: dict):
    """The Distillation tab's quick part: the teacher (the loaded model) against its
    own weights as stored (another compute path), both reading the same text."""
    ctx["tab"] = "distill" in host.lab_tabs()
    if ctx["tab"]:
        yield from steps.lab(host, ctx, host.distill_quick(), LAB_PROMPT)


def say_distill(ctx: dict) -> Sentence:
    if not ctx.get("tab"):
        return Sentence(
            "This version of the Lab has no Distillation tab yet, so nothing ran: the lesson "
            "will run it once the tab exists."
        )
    why, r = _result(ctx)
    if why:
        return Sentence(why)
    train = " The tab's other half distils a small student here, on soft targets and hard labels."
    if not r.same_tokenizer:
        return Sentence(
            f"Teacher and student read the same {r.text_bytes:,} bytes: the teacher needed "
            f"{r.teacher_bits_per_byte:.3f} bits a byte, the student "
            f"{r.student_bits_per_byte:.3f}.{train}",
            {"teacher_bpb": r.teacher_bits_per_byte, "student_bpb": r.student_bits_per_byte},
        )
    return Sentence(
        f"{r.teacher} as teacher and {r.student} as student read the same {len(r.kl):,} "
        f"tokens: the student's distributions were {r.mean_kl:.2g} nats (mean KL) from the "
        f"teacher's, its top token agreed on {100 * r.agreement:.1f} % of them, and its "
        f"cross-entropy was {r.student_ce:.4f} nats a token against the teacher's "
        f"{r.teacher_ce:.4f}. Distillation trains a student to bring that KL down.{train}",
        {"tokens": len(r.kl), "mean_kl": r.mean_kl, "agreement": r.agreement,
         "teacher_ce": r.teacher_ce, "student_ce": r.student_ce},
    )  # fmt: skip


SPEC_KS, SPEC_BITS, SPEC_TOKENS = (2,), 3, 6


def speculative(host, ctx: dict):
    params = SpeculativeParams(SPEC_KS, SPEC_BITS, steps.size(host, SPEC_TOKENS, 3))
    yield from steps.lab(host, ctx, params, "Count to five.")


def say_speculative(ctx: dict) -> Sentence:
    why, r = _result(ctx)
    if why:
        return Sentence(why)
    run = r.runs[0]
    same = "the same" if run.same_as_target else "NOT the same"
    slower = ""
    if run.speedup < 1:
        slower = (
            f" It was slower here: each pass of the model yielded {run.tokens_per_pass:.2f} "
            "tokens, yet drafting cost more time than those passes saved. A draft pays off "
            f"only when it is far cheaper than the model, and a {SPEC_BITS}-bit copy of the "
            "same model is not (the quantization lesson measures its speed)."
        )
    return Sentence(
        f"A {SPEC_BITS}-bit copy drafted {run.k} tokens at a time; the model accepted "
        f"{run.accepted} of {run.drafted} ({100 * run.acceptance:.0f} %), "
        f"{run.tokens_per_pass:.2f} tokens per pass of the big model, ×{run.speedup:.2f} "
        f"the speed, and {same} answer as decoding alone.{slower}",
        {"accepted": run.accepted, "drafted": run.drafted, "speedup": run.speedup},
    )


BATCH_SIZES, BATCH_TOKENS = (1, 4), 4


def batch(host, ctx: dict):
    sizes = BATCH_SIZES if not getattr(host, "tiny", False) else (1, 2)
    params = BatchParams(sizes, steps.size(host, BATCH_TOKENS, 2))
    yield from steps.lab(host, ctx, params, LAB_PROMPT)


def say_batch(ctx: dict) -> Sentence:
    why, r = _result(ctx)
    if why:
        return Sentence(why)
    one, many = r.rows[0], r.rows[-1]
    gain = many.total_tps / one.total_tps
    shared = (
        "a batch shares each weight read."
        if gain > 1
        else "a batch shares each weight read, but here the total did not grow: sharing the "
        "read helps only where reading the weights, not arithmetic, limits decoding."
    )
    return Sentence(
        f"{many.batch_size} sequences decoded together made {many.total_tps:,.1f} tokens/s in "
        f"all against {one.total_tps:,.1f} for one alone (×{gain:.1f}); each sequence got "
        f"{many.per_sequence_tps:,.1f} tokens/s. A cached prompt (the KV cache lesson) skips "
        f"the prefill; {shared}",
        {"one": one.total_tps, "many": many.total_tps, "size": many.batch_size},
    )
