"""The tour walked on the real default model: every lesson's Show me runs its small
experiment, leaves its target view showing that run, frames it, and its sentence's
numbers are the run's records (recomputed here from the records and the model's config)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from app.tour import lab_steps, read_steps, run_steps
from app.tour.false_statements import PAIRS, TINY_PAIRS
from app.tour.lessons import LESSONS
from app.tour.panel import NEEDS_LOCAL
from app.tour.steps import pct
from engine.lab import QuantParams
from engine.models.default_model import DEFAULT_MODEL_NAME
from tests.app.conftest import LOAD_MS, RUN_MS

LESSON_MS = 4 * RUN_MS  # an engine process starts for Inside and for the Lab


def _config(window) -> dict:
    return json.loads((Path(window.model_record.path) / "config.json").read_text())


def _inside(window, ctx, tab):
    win = window.windows.inside
    assert win.state is ctx["run"] and win.tabs.currentWidget() is getattr(win, tab)
    return win


def _journey(window, ctx, sentence):
    win = _inside(window, ctx, "journey")
    rec = ctx["record"]
    assert win.journey.record is rec and rec.step == 0
    return rec, _config(window)


def check_tokenization(window, ctx, s):
    _rec, _c = _journey(window, ctx, s)
    run = ctx["run"]
    assert s.numbers == {"characters": len(run.prompt), "prompt_tokens": run.done.prompt_tokens}


def check_embedding(window, ctx, s):
    rec, config = _journey(window, ctx, s)
    values = np.array(rec.data.embedding.values, dtype=np.float64)
    assert s.numbers["dimensions"] == config["hidden_size"] == len(values)
    assert s.numbers["norm"] == pytest.approx(np.linalg.norm(values), rel=1e-5)
    cosines = [c for _i, c in rec.data.embedding.neighbours]
    assert s.numbers["cosine"] == max(cosines)


def _check_layers(window, ctx, s, key):
    rec, config = _journey(window, ctx, s)
    ratios = np.array([getattr(r, key) for r in rec.data.layers], dtype=np.float64)
    assert s.numbers["layers"] == config["num_hidden_layers"] == len(ratios)
    assert s.numbers["mean"] == pytest.approx(ratios.mean(), rel=1e-12)
    assert s.numbers["top_layer"] == int(ratios.argmax()) and s.numbers["top"] == ratios.max()


def check_attention(window, ctx, s):
    _check_layers(window, ctx, s, "attention")


def check_feed_forward(window, ctx, s):
    _check_layers(window, ctx, s, "ffn")


def check_projection(window, ctx, s):
    _journey(window, ctx, s)
    first = ctx["run"].tokens[0]  # the run's own record of step 0 (greedy)
    assert s.numbers["chosen_rank"] == 1
    assert s.numbers["top_prob"] == pytest.approx(math.exp(first.top[0].logprob), abs=2e-3)


def check_sampling(window, ctx, s):
    run = ctx["run"]
    assert window.state is run and window.temp_chart.record is run.tokens[0]
    lp = np.array([c.logprob for c in run.tokens[0].top], dtype=np.float64)
    tail = 1.0 - np.exp(lp).sum()  # what the recorded candidates leave out at T = 1
    for key, t in (("low", 0.2), ("high", 1.2)):
        scaled = lp / t
        only_top = math.exp(scaled[0] - np.logaddexp.reduce(scaled))  # an upper bound
        assert only_top - max(tail, 0.0) - 2e-3 <= s.numbers[key] <= only_top + 2e-3


def check_iteration(window, ctx, s):
    run = ctx["run"]
    assert window.state is run and window.output.plain_text() == run.text
    assert s.numbers == {"steps": len(run.tokens), "prompt_tokens": run.done.prompt_tokens}


def check_sample_n(window, ctx, s):
    texts = [a.state.text for a in window.session.home().answers if a.branch_kind == "sample"]
    n = 2 if window.tour.host.tiny else run_steps.SAMPLE_N
    assert ctx["n"] == n and len(texts) == s.numbers["samples"] == n
    assert s.numbers["distinct"] == len(set(texts))
    assert window.side_tabs.currentWidget() is window.branches_view
    point = window.branches_view.tree.topLevelItem(0).child(0)
    assert point.childCount() == n


def check_branches(window, ctx, s):
    parent, child, k = ctx["run"], ctx["branch"], run_steps.BRANCH_STEP
    assert window.state is child and child.branch["parent"] == parent.run_id
    assert child.tokens[k].forced and child.tokens[k].token_id == ctx["alternative"].token_id
    assert s.numbers["chosen"] == parent.tokens[k].prob
    assert s.numbers["alternative"] == pytest.approx(child.tokens[k].prob, abs=1e-4)


def check_read(window, ctx, s):
    if ctx.get("needs_local"):  # mlx_lm.server does not score a given text: it says so
        assert window.state is ctx["run"] and ctx["run"].error is not None
        assert "this server does not return" in s.text and window.tour.panel.switch.isVisible()
        return
    n = TINY_PAIRS if window.tour.host.tiny else len(PAIRS)
    ppl = np.array(  # each read's perplexity from its tokens, here in float64 NumPy
        [[np.exp(-np.mean([t.logprob for t in r.tokens])) for r in pair] for pair in ctx["reads"]]
    )
    assert ppl.shape == (n, 2) and s.numbers["pairs"] == n
    shown = int(np.argmin(ppl[:, 1] / ppl[:, 0]))  # the false statement's best showing
    assert ctx["shown"] == shown and s.numbers["lower"] == int(np.sum(ppl[:, 1] < ppl[:, 0]))
    true, run, pair = ctx["true"], ctx["run"], PAIRS[shown]
    assert (true.prompt, run.prompt) == (pair.true, pair.false)
    assert ctx["reads"][shown][0] is true and ctx["reads"][shown][1] is run
    assert window.state is run and run.reading and window.output.plain_text() == run.prompt
    pt, pf = s.numbers["true_perplexity"], s.numbers["false_perplexity"]
    assert (pt, pf) == pytest.approx(tuple(ppl[shown]), rel=1e-6)
    assert pf == run.done.reading.perplexity  # the figure on screen, in the status line
    assert f"perplexity {pf:,.2f}" in window.status_label.text()
    assert f"{pf:,.2f}" in s.text and f"{pt:,.2f}" in s.text and pair.false in s.text
    k = s.numbers["step"]
    assert [t.token_id for t in true.tokens[:k]] == [t.token_id for t in run.tokens[:k]]
    assert true.tokens[k].token_id != run.tokens[k].token_id
    assert window.dist_chart.record is run.tokens[k]  # every chart at the differing token
    assert s.numbers["true"] == true.tokens[k].prob
    assert s.numbers["false"] == pytest.approx(math.exp(run.tokens[k].logprob), rel=1e-9)
    _check_confidently_wrong(window, ctx, s)


def _check_confidently_wrong(window, ctx, s):
    """The Confidence tab ran the lesson's questions; the sentence's most confident wrong
    answer is found again here from the rows' token log-probabilities (float64 NumPy)."""
    lab, r = window.windows.lab, ctx["confidence"]["result"]
    assert r.kind == "calibrate" and lab.confidence.result is r
    assert lab.tabs.currentWidget() is lab.confidence
    tiny = window.tour.host.tiny
    n = read_steps.TINY_CONFIDENCE_QUESTIONS if tiny else read_steps.CONFIDENCE_QUESTIONS
    assert lab.confidence.params().limit == n and r.samples == read_steps.CONFIDENCE_SAMPLES
    assert r.answered == len(r.rows) == s.numbers["questions"] == n
    assert s.numbers["right"] == sum(row.correct for row in r.rows)
    mean = np.array([np.mean(np.exp(np.array(row.token_logprobs))) for row in r.rows])
    wrong = [i for i, row in enumerate(r.rows) if not row.correct]
    if not wrong:
        assert "wrong_line" not in s.numbers and "None of its answers was wrong" in s.text
        return
    top = max(wrong, key=lambda i: mean[i])
    row = r.rows[top]
    assert s.numbers["wrong_line"] == row.line
    assert s.numbers["wrong_mean_prob"] == pytest.approx(mean[top], rel=1e-12)
    assert s.numbers["wrong_mean_prob"] == row.signal("mean_prob")
    right = [i for i, x in enumerate(r.rows) if x.correct]
    assert s.numbers["right_below"] == sum(mean[i] < mean[top] for i in right)
    assert f"to “{row.question}”, with a mean token probability of {pct(mean[top])}" in s.text


def check_position(window, ctx, s):
    from engine.backends.mlx.position import bin_edges

    win = _inside(window, ctx, "position")
    assert ctx["record"] is not None, (win.where.text(), win._key(), list(win.cache), win.pending)
    d = ctx["record"].data
    assert win.position.record is ctx["record"]
    mean = np.array(d.mean, dtype=np.float64)
    edges = bin_edges(len(mean))
    assert s.numbers["tokens"] == len(mean)
    for key, name in (("first", "first token"), ("middle", "middle"), ("last", "last 10%")):
        a, b = edges[name]
        assert s.numbers[key] == pytest.approx(mean[a:b].sum(), abs=1e-6)
        assert s.numbers[f"{key}_each"] == pytest.approx(mean[a:b].mean(), abs=1e-6)
    each = {k: s.numbers[f"{k}_each"] for k in ("first", "middle", "last")}
    lost = each["middle"] < min(each["first"], each["last"])
    assert ("the middle got the least" in s.text) == lost
    assert ("here the middle was not lost" in s.text) == (not lost)


def check_prefill(window, ctx, s):
    _inside(window, ctx, "hardware")
    d = ctx["run"].done
    assert s.numbers == {"prefill_tps": d.prefill_tps, "decode_tps": d.decode_tps}
    assert d.cached_tokens == 0  # cold: the whole prompt was prefilled
    assert d.prefill_tps == pytest.approx(d.prompt_tokens / d.prefill_s)


def _lab(window, ctx, kind):
    lab = window.windows.lab
    assert lab.tabs.currentWidget() is lab.views[kind] and ctx["result"].kind == kind
    return lab, ctx["result"]


def check_kv_cache(window, ctx, s):
    lab, r = _lab(window, ctx, "cache")
    turn = r.rows[-1]
    assert lab.cache.table.rowCount() == len(r.rows) == 2
    assert s.numbers["cached_tokens"] == turn.cached_tokens >= r.rows[0].prompt_tokens
    assert s.numbers["context_length"] == window.model_record.context_length


def check_quantization(window, ctx, s):
    lab, r = _lab(window, ctx, "quant")
    assert lab.quant.result is r
    tokens = 2 if window.tour.host.tiny else lab_steps.QUANT_TOKENS
    assert lab.quant.params() == QuantParams((lab_steps.QUANT_BITS,), tokens)  # what ran
    variant = next(v for v in r.variants if v.bits == lab_steps.QUANT_BITS)
    assert s.numbers["mean_kl"] == pytest.approx(np.mean(variant.kl), rel=1e-6)
    assert s.numbers["agree"] == sum(variant.agree) and s.numbers["steps"] == len(r.answer_ids)
    faster = variant.decode_tps > r.variants[0].decode_tps
    assert ("not faster here" in s.text) == (not faster)
    assert ("only slightly different" in s.text) == (np.mean(variant.kl) < lab_steps.SLIGHT_KL)


def check_distillation(window, ctx, s):
    lab, r = _lab(window, ctx, "distill")  # the teacher against its 3-bit copy
    assert lab.distill.result is r and r.same_tokenizer
    assert r.mean_kl > 0.05 and r.student.endswith("re-quantized to 3-bit")
    t_lp = np.array(r.teacher_logprob, dtype=np.float64)
    s_lp = np.array(r.student_logprob, dtype=np.float64)
    assert s.numbers["tokens"] == len(r.kl) == len(t_lp) > 5
    assert s.numbers["mean_kl"] == pytest.approx(np.mean(np.array(r.kl, dtype=np.float64)))
    assert s.numbers["agreement"] == pytest.approx(np.mean(r.agree))
    assert s.numbers["teacher_ce"] == pytest.approx(-t_lp.mean(), rel=1e-6)
    assert s.numbers["student_ce"] == pytest.approx(-s_lp.mean(), rel=1e-6)


def check_speculative(window, ctx, s):
    lab, r = _lab(window, ctx, "speculative")
    run = r.runs[0]
    assert lab.speculative.result is r and run.accepted + run.rejected == run.drafted
    assert s.numbers == {"accepted": run.accepted, "drafted": run.drafted, "speedup": run.speedup}


def check_batching(window, ctx, s):
    _view, r = _lab(window, ctx, "batch")
    one, many = r.rows
    assert (one.batch_size, many.batch_size) == ((1, 2) if window.tour.host.tiny else (1, 4))
    assert s.numbers["one"] == pytest.approx(one.generated_tokens / one.seconds)
    assert s.numbers["many"] == pytest.approx(many.generated_tokens / many.seconds)


def check_thinking(window, ctx, s):
    run = ctx["run"]
    assert window.state is run
    assert s.numbers == {"thinking": sum(t.thinking for t in run.tokens), "tokens": len(run.tokens)}
    assert s.numbers["thinking"] == run.done.thinking_tokens


def check_cost(window, ctx, s):
    d = ctx["run"].done
    if d.energy_j is None:  # a server: its time per token and an API's price for the tokens
        from engine.cost.costs import load_prices

        assert window.state is ctx["run"] and window.model_record.backend != "mlx"
        assert s.numbers["per_token_s"] == pytest.approx(d.elapsed_s / d.generated_tokens)
        p = load_prices()[0]
        price = (d.prompt_tokens * p.input_per_mtok + d.generated_tokens * p.output_per_mtok) / 1e6
        assert s.numbers["api"] == pytest.approx(price, rel=1e-12)
        assert "does not report its energy" in s.text
        return
    per = d.energy_j / d.generated_tokens
    assert s.numbers["per_token"] == pytest.approx(per)
    assert f"≈ {per:.2g} J/token" in window.status_label.text()
    from engine.cost.costs import DEFAULT_CURRENCY, DEFAULT_PRICE_PER_KWH, load_settings

    price = load_settings()  # what the engine read at the run's start
    assert s.numbers["price_per_kwh"] == pytest.approx(price.price_per_kwh, rel=1e-9)
    default = (price.price_per_kwh, price.currency) == (DEFAULT_PRICE_PER_KWH, DEFAULT_CURRENCY)
    whose = "the default price" if default else "your price"
    assert f"at {whose} of {price.price_per_kwh:.4g} {price.currency} per kWh" in s.text


def check_routing(window, ctx, s):
    attempts = ctx["attempts"]
    small = attempts[0]
    note = small.route
    assert window.right_size.sizing() is None  # the lesson turns it off again
    # the decision, recomputed from the small answer's own tokens
    least = float(np.exp([t.logprob for t in small.tokens if not t.eos]).min())
    assert note.value == pytest.approx(least, rel=1e-9) and s.numbers["value"] == note.value
    assert s.numbers["threshold"] == note.threshold == 0.2
    assert s.numbers["small_s"] == small.done.elapsed_s
    if note.failed:
        assert "did not answer" in s.text
    elif least < 0.2:
        large = attempts[-1]
        assert note.escalated and len(attempts) == 2 and large.route.partner is small
        assert large.model.path != small.model.path and large.error is None
        assert s.numbers["large_s"] == large.done.elapsed_s
        assert f"below 0.20: {note.large} answered the same turn" in s.text
    else:
        assert not note.escalated and len(attempts) == 1
        assert "at or above 0.20: its answer was kept" in s.text


CHECKS = {name[6:]: f for name, f in globals().items() if name.startswith("check_")}


WHERE = [
    "smollm",
    pytest.param("gemma", marks=pytest.mark.slow),
    pytest.param("server", marks=pytest.mark.slow),
]


def _use(request, qtbot, window, where: str) -> None:
    """Load the walk's model in `window`: Gemma 3 270M, or the session's mlx_lm.server."""
    from tests.app.test_remote_window import use_model

    if where == "gemma":
        use_model(qtbot, window, str(request.getfixturevalue("gemma_path")))
    elif where == "server":
        use_model(qtbot, window, f"{request.getfixturevalue('mlx_server')}#")


# The walk on Gemma 3 270M leaves out the lessons whose code path does not depend on
# which local model answers, or whose Gemma-specific parts other tests check on Gemma;
# the smollm walk (every lesson, the full sizes) checks each lesson itself, and the
# server walk the playground ones on another backend.
# - sampling: temperature applied to the run's recorded top candidates (arithmetic only);
# - sample_n and branches: seeded runs and a forced token through the same generate loop
#   as iteration (kept: the streamed text through Gemma's own detokenizer);
# - prefill: the Hardware tab's timings of a run, the same on any model;
# - distillation: the teacher against its re-quantized copy; on Gemma its parts are
#   checked elsewhere: dequantizing its weights (tests/engine/test_compute_paths.py
#   [gemma]), re-quantizing its layers (the speculative lesson here: its draft is Gemma
#   re-quantized to 3 bits), and comparing its distributions
#   (tests/engine/test_distill_compare.py, Gemma as the student);
# - quantization: variants teacher-forced against the reference, the same code on any
#   model; on Gemma its parts are checked elsewhere: re-quantizing its layers and their
#   products on BLAS (the speculative lesson here), its stored mixed 4/5/8-bit layers
#   against bare mlx-lm (tests/engine/test_gemma.py), every bit width's BLAS product
#   (tests/engine/test_quantized_blas.py). It was the walk's longest lesson (14 s of
#   33 s idle): its 3-bit variant and the installed one run short prompts on MLX's
#   quantized kernel;
# - read: pairs of reads scored by perplexity and the Confidence tab's questions; on Gemma
#   both are checked elsewhere: its reads against a bare pass (tests/engine/test_read.py,
#   short and over several chunks) and through the app's engine
#   (tests/app/test_compare_read.py), its answers to the same bundled questions in the
#   Confidence tab (tests/app/test_lab_confidence_compare.py).
# Kept on Gemma: the journey (its blocks, scaled embedding, vocabulary), iteration,
# position (its sliding-window attention), the Lab's cache (rotating KV caches),
# speculative (re-quantizing its layers, trimming its caches) and batching (batched
# caches), and thinking and cost (its chat template).
# - routing: the right-sized model's flow (a second run of the turn on another model) is
#   the same whichever model answers first; the escalation to Gemma is walked on smollm
#   and checked in tests/app/test_right_size.py.
SAME_ON_ANY_MODEL = {
    "sampling", "sample_n", "branches", "read", "prefill", "distillation", "quantization",
    "routing",
}  # fmt: skip


def _walked(where: str, key: str) -> bool:
    return where != "gemma" or key not in SAME_ON_ANY_MODEL


def _needs_local(window, panel, ctx, s):
    """On a server, a lesson that reads the weights says so, offers a switch, runs nothing."""
    assert ctx == {"needs_local": True} and s.text == NEEDS_LOCAL
    assert panel.switch.isVisible() and DEFAULT_MODEL_NAME in panel.switch.text()
    assert window.windows.inside is None and window.windows.lab is None


@pytest.mark.timeout(1800)  # minutes on a loaded machine; pyproject.toml's limit is 10
@pytest.mark.parametrize("where", WHERE)
def test_every_lesson_runs_on_the_loaded_model(qtbot, window, request, where):
    assert set(CHECKS) == {x.key for x in LESSONS} >= SAME_ON_ANY_MODEL
    _use(request, qtbot, window, where)
    tour = window.tour
    tour.host.tiny = where != "smollm"  # the other walks run the smallest experiments
    panel = tour.open(0)
    assert panel.progress.text() == f"Lesson 1 of {len(LESSONS)}"
    for i, lesson in enumerate(LESSONS):
        if not _walked(where, lesson.key):
            continue
        panel.show_lesson(i)
        with qtbot.waitSignal(panel.finished, timeout=LESSON_MS) as got:
            panel.show_me.click()
        key, ctx, sentence = got.args
        assert key == lesson.key and "failed" not in ctx, (key, sentence.text)
        assert panel.sentence.text() == sentence.text and panel.sentence.isVisible()
        if lesson.needs_local and where == "server":
            _needs_local(window, panel, ctx, sentence)
            continue
        assert panel.switch.isVisible() == bool(ctx.get("needs_local"))
        CHECKS[key](window, ctx, sentence)
        framed = tour.host.highlighted
        assert framed is tour.host.target_widget(lesson.target)
        assert tour.host.highlighter.frame.target is framed
    for child in (window.windows.lab, window.windows.inside):
        if child is not None:
            child.close()
    if where == "server":  # the offer to switch loads the default local model
        panel.show_lesson(0)
        panel.show_me.click()
        panel.switch.click()
        assert not panel.switch.isVisible() and "Loading" in panel.sentence.text()
        qtbot.waitUntil(lambda: tour.host.local() and not window.bridge.busy, timeout=LOAD_MS)
        assert window.model_record.name == DEFAULT_MODEL_NAME


def test_help_menu_opens_the_tour_and_back_next_move(qtbot, window):
    action = window.tour.action
    assert action in window.menuBar().actions()[-1].menu().actions()
    action.trigger()
    panel = window.tour.panel
    assert panel.isVisible() and panel.title.text() == LESSONS[0].title
    assert not panel.back.isEnabled()
    panel.next.click()
    assert panel.progress.text() == f"Lesson 2 of {len(LESSONS)}"
    assert panel.text.text() == LESSONS[1].text and not panel.sentence.isVisible()
    panel.back.click()
    assert panel.index == 0
    action.trigger()  # reopening keeps the lesson
    assert panel.index == 0


def test_the_first_run_offer_is_made_once(qtbot, window):
    from app.shell.tour_wiring import OFFERED_KEY, offer_once

    window.store.remove(OFFERED_KEY)
    box = offer_once(window)
    qtbot.addWidget(box)
    assert box.isVisible() and not box.isModal()
    assert offer_once(window) is None  # remembered
    box.buttons()[0].click()  # Start the tour
    assert window.tour.panel is not None and window.tour.panel.index == 0
