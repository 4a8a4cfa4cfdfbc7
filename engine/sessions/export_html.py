"""A self-contained HTML report: probability-shaded tokens with their
alternatives on hover (pure CSS), and the charts drawn as inline SVG.

No script, no external resource, no network. Model output is text: every
string that comes from a model or a user passes through `html.escape`, and
none is ever placed in an attribute that could run code.
"""

from __future__ import annotations

import html
import math
import time

from engine.display.prob_scale import DEFAULT_SCALE, gradient_stops, hex_rgb, prob_rgb, text_rgb
from engine.display.ticks import nice_ticks
from engine.display.units import fmt_or_na as _unit
from engine.display.units import fmt_prob, to_mb
from engine.models.display_name import model_name
from engine.run.run_kind import first_generated_step, generated, is_read
from engine.run.series import rolling_tps
from engine.sessions.journal import RunLog, SessionLog
from engine.sessions.report_rows import cost_rows, problems, read_rows

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 560, 200, 48, 44, 26, 32

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1180px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 36px; border-top: 1px solid #ddd;
  padding-top: 16px; }
.meta { color: #555; } pre { background: #f6f6f6; padding: 8px; white-space: pre-wrap; }
.tokens { font: 15px/1.9 ui-monospace, monospace; white-space: pre-wrap; padding: 10px;
  border: 1px solid #ddd; border-radius: 4px; }
.tok { position: relative; border-radius: 2px; }
.tok .alt { display: none; position: absolute; left: 0; top: 1.7em; z-index: 9;
  background: #fff; border: 1px solid #999; box-shadow: 0 2px 6px #0003; padding: 4px 6px;
  font: 12px/1.3 system-ui, sans-serif; white-space: nowrap; }
.tok:hover .alt { display: block; } .tok:hover { outline: 1px solid #333; }
.mark { color: #666; font-size: 11px; } .alt td { padding: 0 4px; } .alt .chosen { font-weight: bold; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
svg { background: #fff; border: 1px solid #ddd; }
svg text { font: 11px system-ui, sans-serif; fill: #444; }
table.stats td { padding: 1px 10px 1px 0; }
details.thinking { background: #faf6ec; border: 1px solid #e2d6b5; padding: 4px 8px;
  margin-bottom: 8px; } details.thinking summary { color: #6b5320; font: 600 13px system-ui; }
.legend { display: inline-block; width: 240px; height: 12px; vertical-align: middle; }
.tok.forced { outline: 2px solid #e45756; outline-offset: 1px; }
"""


def _shade(p: float | None, scale: str) -> str:
    """The inline style of a token: its shading and a text colour readable on it
    (grey where the probability was not reported, never a made-up shade)."""
    rgb = prob_rgb(p, scale)
    return f"background:{hex_rgb(rgb)};color:{hex_rgb(text_rgb(rgb))}"


def _legend(scale: str) -> str:
    stops = ", ".join(f"{c} {p:.0%}" for p, c in gradient_stops(scale))
    return f"<span class='legend' style='background:linear-gradient(90deg, {stops})'></span>"


def _e(text) -> str:
    """The one escaping helper: every value placed in the page goes through it."""
    return html.escape(str(text), quote=True)


def _pct(p) -> str:
    return "not recorded" if p is None else fmt_prob(p)


def token_spans(run: RunLog, scale: str = DEFAULT_SCALE) -> str:
    """The answer's tokens shaded by probability; thinking tokens in a folding block.

    Args:
        run: the run.
        scale: the probability colour scale (engine.display.prob_scale.SCALES).

    Returns:
        HTML: one span per token, its step, probability, entropy and top eight
        alternatives in a hover box (grey where the probability was not reported).
    """
    out, thought = [], []
    for t in run.tokens:
        rows = "".join(
            f"<tr class='{'chosen' if c.token_id == t.token_id else ''}'>"
            f"<td>{_e(repr(c.text))}</td><td>{_e(fmt_prob(math.exp(c.logprob)))}</td></tr>"
            for c in (t.top or t.sampled_top)[:8]
        )
        p = _pct(t.prob).replace("not recorded", "not reported")
        h = "not reported" if t.entropy is None else f"{t.entropy:.2f} nats"
        chosen = " · chosen by the person (a branch)" if t.forced else ""
        if t.read:  # a token of the text read: the model's rank for it, nothing chosen
            chosen = " · read" + (f" · rank {t.rank:,}" if t.rank is not None else "")
        head = _e(f"step {t.step} · {t.label!r} · p={p} · H={h}{chosen}")
        alt = f"<span class='alt'>{head}<table>{rows}</table></span>"
        shown = _e(t.text) if t.text else f"<span class='mark'>{'⏎ end' if t.eos else '·'}</span>"
        (thought if t.thinking else out).append(
            f"<span class='tok{' forced' if t.forced else ''}' style='{_shade(t.prob, scale)}' "
            f"data-step='{_e(t.step)}'>{shown}{alt}</span>"
        )
    if thought:
        out.insert(
            0,
            f"<details open class='thinking'><summary>Thinking · {len(thought)} "
            f"tokens</summary>{''.join(thought)}</details>",
        )
    return "".join(out)


def _scale(v, lo, hi, a, b):
    return a + (b - a) * ((v - lo) / (hi - lo) if hi > lo else 0.0)


def svg_line_chart(
    title, xs, series, xlabel, ylabel, y2=None, marks=(), regions=(), x_from=None
) -> str:
    """An inline SVG line chart (W x H pixels) with round-number axis ticks.

    Args:
        title: the chart's title.
        xs: the x values, shared by every series.
        series: [(values, color, label)] on the left axis, which starts at 0.
        xlabel: the x axis's label.
        ylabel: the left axis's label.
        y2: optional (values, color, label) drawn dashed on its own scale.
        marks: (x, label) vertical marker lines.
        regions: (x_from, x_to, color, label) shaded spans.
        x_from: where the x axis starts; None: at the smallest x.

    Returns:
        The `<svg>` element.
    """
    x0, x1 = (min(xs), max(xs)) if xs else (0, 1)
    x0 = x_from if x_from is not None else x0
    x1 = x1 if x1 > x0 else x0 + 1
    ymax = max([y for v, _c, _l in series for y in v if math.isfinite(y)] + [1e-9])
    parts = [
        f"<svg width='{W}' height='{H}' viewBox='0 0 {W} {H}' role='img'>",
        f"<text x='{W / 2}' y='16' text-anchor='middle' font-weight='bold'>{_e(title)}</text>",
    ]
    px = lambda x: _scale(x, x0, x1, PAD_L, W - PAD_R)  # noqa: E731
    py = lambda y, top: _scale(y, 0, top, H - PAD_B, PAD_T)  # noqa: E731
    for a, b, color, label in regions:
        parts.append(
            f"<rect x='{px(a):.1f}' y='{PAD_T}' width='{px(b) - px(a):.1f}' "
            f"height='{H - PAD_T - PAD_B}' fill='{color}' opacity='0.25'/>"
            f"<text x='{px(a) + 3:.1f}' y='{PAD_T + 12}'>{_e(label)}</text>"
        )
    parts.append(_axes(x0, x1, ymax, xlabel, ylabel, px, lambda y: py(y, ymax)))
    for values, color, _label in series:
        parts.append(_polyline(xs, values, color, px, lambda y: py(y, ymax)))
    if y2 is not None:
        values, color, label = y2
        top = max([v for v in values if math.isfinite(v)] + [1e-9])
        parts.append(_polyline(xs, values, color, px, lambda y: py(y, top), dash=True))
        parts.append(
            f"<text x='{W - 4}' y='{PAD_T - 4}' text-anchor='end' fill='{color}'>"
            f"{_e(label)} (max {top:.2f})</text>"
        )
    for x, label in marks:
        parts.append(
            f"<line x1='{px(x):.1f}' x2='{px(x):.1f}' y1='{PAD_T}' y2='{H - PAD_B}' "
            f"stroke='#e45756' stroke-dasharray='4 3'/><text x='{px(x) + 3:.1f}' "
            f"y='{PAD_T + 24}' fill='#e45756'>{_e(label)}</text>"
        )
    legend = " · ".join(_e(label) for _v, _c, label in series)
    parts.append(f"<text x='{PAD_L}' y='{PAD_T - 4}'>{legend}</text></svg>")
    return "".join(parts)


def _polyline(xs, ys, color, px, py, dash=False) -> str:
    """A line through the points whose y is known (a NaN is left out, never drawn)."""
    known = [(x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(y)]
    pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in known)
    extra = " stroke-dasharray='5 3'" if dash else ""
    return f"<polyline fill='none' stroke='{color}' stroke-width='1.5'{extra} points='{pts}'/>"


def _tick(v: float) -> str:
    """An axis number short enough for the left margin: 950, 1.3k, 28k, 1.2M."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.2g}{suffix}" if abs(v) < 10 * scale else f"{v / scale:.0f}{suffix}"
    return f"{v:.3g}"


def _axes(x0, x1, ymax, xlabel, ylabel, px, py) -> str:
    parts = [
        f"<line x1='{PAD_L}' y1='{H - PAD_B}' x2='{W - PAD_R}' y2='{H - PAD_B}' stroke='#888'/>",
        f"<line x1='{PAD_L}' y1='{PAD_T}' x2='{PAD_L}' y2='{H - PAD_B}' stroke='#888'/>",
    ]
    for x in nice_ticks(x0, x1):  # round numbers (1-2-5 steps), not quarters of the range
        parts.append(
            f"<text x='{px(x):.1f}' y='{H - PAD_B + 14}' text-anchor='middle'>{_tick(x)}</text>"
        )
    for y in nice_ticks(0, ymax):
        parts.append(
            f"<text x='{PAD_L - 4}' y='{py(y) + 4:.1f}' text-anchor='end'>{_tick(y)}</text>"
        )
    parts.append(
        f"<text x='{(PAD_L + W - PAD_R) / 2}' y='{H - 4}' text-anchor='middle'>"
        f"{_e(xlabel)}</text><text x='12' y='{H / 2}' text-anchor='middle' "
        f"transform='rotate(-90 12 {H / 2})'>{_e(ylabel)}</text>"
    )
    return "".join(parts)


def svg_distribution(run: RunLog) -> str:
    """Bars of the least confident step: raw (T=1) beside sampled-from.

    Args:
        run: the run.

    Returns:
        The `<svg>` element for its top eight candidates and, when it is not among
        them (a read's token may be rank 803), the token read or chosen as a bar of
        its own, marked so; or "" when no step has a reported probability and
        candidates.
    """
    tokens = [t for t in run.tokens if t.prob is not None and t.top]
    if not tokens:
        return ""  # nothing to draw (a server that reports no probabilities)
    t = min(tokens, key=lambda r: r.prob)
    cands = [(c.token_id, c.text, math.exp(c.logprob)) for c in t.top[:8]]
    outside = t.token_id not in {i for i, _text, _p in cands}
    if outside:  # the step's own token, below the candidates: its bar too
        cands.append((t.token_id, t.label, t.prob))
    # None: not recorded; a read samples nothing, so it has one distribution, raw.
    sampled = [None if t.read else t.sampled_prob_of(i) for i, _text, _p in cands]
    row, left = 20, 110
    height = PAD_T + row * len(cands) + 24 + (6 if outside else 0)
    top = max([p for _i, _t, p in cands] + [p or 0.0 for p in sampled] + [1e-9])
    verb = "read" if t.read else "chose"
    parts = [
        f"<svg width='{W}' height='{height}' viewBox='0 0 {W} {height}' role='img'>",
        f"<text x='{W / 2}' y='16' text-anchor='middle' font-weight='bold'>"
        + (
            f"Least likely token, step {t.step}: read {_e(repr(t.label))} (p={fmt_prob(t.prob)}"
            if t.read
            else f"Least confident step {t.step}: chose {_e(repr(t.label))} (p={fmt_prob(t.prob)}"
        )
        + (f", rank {t.rank:,}" if t.rank is not None else "")
        + ")</text>",
    ]
    for i, ((tid, text, raw), samp) in enumerate(zip(cands, sampled, strict=True)):
        own = outside and i == len(cands) - 1  # the token itself, after a gap
        y = PAD_T + i * row + (6 if own else 0)
        wr = (W - left - 110) * raw / top
        ws = (W - left - 110) * (samp or 0.0) / top
        weight = " font-weight='bold'" if tid == t.token_id else ""
        mark = f" · the token {verb}" + (f", rank {t.rank:,}" if t.rank is not None else "")
        if own:
            parts.append(
                f"<line x1='{left - 100}' x2='{W - 20}' y1='{y - 2}' y2='{y - 2}' "
                "stroke='#bbb' stroke-dasharray='3 3'/>"
            )
        parts.append(
            f"<text x='{left - 6}' y='{y + 13}' text-anchor='end'{weight}>"
            f"{_e(repr(text))}</text>"
            f"<rect x='{left}' y='{y + 2}' width='{wr:.1f}' height='7' fill='#4c78a8'/>"
            f"<rect x='{left}' y='{y + 9}' width='{ws:.1f}' height='7' fill='#f58518'/>"
            f"<text x='{left + max(wr, ws) + 4:.1f}' y='{y + 13}'{weight}>{_e(fmt_prob(raw))}"
            + ("" if t.read else f" / {_e(_pct(samp))}")
            + (_e(mark) if own else "")
            + "</text>"
        )
    parts.append(
        f"<text x='{left}' y='{height - 6}'><tspan fill='#4c78a8'>■ the model's "
        "distribution (T=1)</tspan></text></svg>"
        if t.read
        else f"<text x='{left}' y='{height - 6}'><tspan fill='#4c78a8'>■ raw (T=1)"
        "</tspan> <tspan fill='#f58518'>■ sampled from</tspan></text></svg>"
    )
    return "".join(parts)


def run_section(run: RunLog, scale: str = DEFAULT_SCALE) -> str:
    """One run's part of the report.

    A read (engine/reading) speaks of the text read: its tokens, perplexity and bits
    per byte, with no sampling settings (none applied) and no decode to chart.

    Args:
        run: the run.
        scale: the probability colour scale of the tokens.

    Returns:
        HTML: title, settings, system prompt and earlier turns, prompt, shaded
        answer, charts (probability, throughput, distribution) and statistics; for a
        read: title, context, the shaded text, charts and the read's statistics.
    """
    if is_read(run.tokens, run.done):
        return _read_section(run, scale)
    d, s, tokens = run.done, run.settings_used, run.tokens
    # A branch's shared prefix is copied from its parent, stamped 0 s: its speed is
    # the branch's own, from the branch point on (engine/run/run_kind.py).
    own = generated(tokens, run.branch)
    times = [t.elapsed_s for t in own]
    tps = rolling_tps(times).tolist()
    chosen = [(t.step, f"chosen {t.label!r}") for t in tokens if t.forced]
    charts = [_probability_chart(tokens, "p(chosen)", chosen)]
    if own:
        ttft = d.ttft_s if d and d.ttft_s is not None else times[0]
        start = first_generated_step(run.branch)
        # The first step has no speed of its own (NaN): the curve starts at the second.
        title = f"Throughput (the branch, from step {start})" if run.branch else "Throughput"
        charts.append(
            svg_line_chart(
                title,
                times[1:],
                [(tps[1:], "#f58518", "tokens/s")],
                "seconds since Run",
                "tokens/s",
                marks=[(ttft, f"TTFT {ttft:.2f}s")],
                regions=[(0.0, ttft, "#4c78a8", "prefill")],
                x_from=0.0,
            )
        )
    if tokens:
        charts.append(svg_distribution(run))
    settings = ", ".join(
        f"{k}={_e(s.get(k))}"
        for k in (
            "temperature",
            "top_p",
            "top_k",
            "min_p",
            "repetition_penalty",
            "max_tokens",
            "seed",
        )
    )
    stats = ""
    if d:
        rows = (
            ("finish", d.finish_reason),
            ("prompt tokens", _unit(d.prompt_tokens, "d", "")),
            ("generated tokens", d.generated_tokens),
            ("TTFT", _unit(d.ttft_s, ".3f", "s")),
            ("prefill", _unit(d.prefill_tps, ".1f", "tok/s")),
            ("decode", _unit(d.decode_tps, ".1f", "tok/s")),
            (
                "context",
                f"{d.prompt_tokens + d.generated_tokens} of {d.context_length}"
                if d.prompt_tokens is not None and d.context_length
                else "not reported",
            ),
            ("KV cache", _unit(to_mb(d.kv_cache_bytes), ".2f", "MB")),
            ("peak memory", _unit(to_mb(d.peak_memory_bytes), ".1f", "MB")),
            *((k, v) for k, v in problems(run) if v),
            *cost_rows(run),
        )
        stats = _stats_table(rows)
    system = (
        f"<p><b>System</b></p><pre>{_e(s['system_prompt'])}</pre>" if s.get("system_prompt") else ""
    )
    if run.messages:
        system += (
            f"<details open><summary><b>Conversation so far</b> (this is turn "
            f"{run.conversation['turn'] + 1})</summary>"
            + "".join(
                f"<p><i>{_e(m['role'].capitalize())}</i></p><pre>{_e(m['content'])}</pre>"
                for m in run.messages
            )
            + "</details>"
        )
    return (
        f"{_heading(run)}{_branch_line(run)}<br>{settings}</p>{system}"
        f"<p><b>Prompt</b></p><pre>{_e(run.prompt)}</pre>"
        f"<p><b>Answer</b> {_legend(scale)} unlikely → likely (hover a token)</p>"
        f"<div class='tokens'>{token_spans(run, scale)}</div>{_error(run)}"
        f"<div class='charts'>{''.join(charts)}</div>{stats}"
    )


def _read_section(run: RunLog, scale: str) -> str:
    """A read's part of the report: the text shaded by how likely the model found each
    of its tokens, with the read's figures (no settings: nothing was sampled)."""
    s = run.settings_used
    context = (
        "<p><b>Context</b> (read before the text, not scored)</p>"
        f"<pre>{_e(s['system_prompt'])}</pre>"
        if s.get("system_prompt")
        else ""
    )
    summary = run.done.reading if run.done is not None else None
    whole = ""
    if summary is None or not summary.complete:  # the tokens hold only what was read
        whole = f"<details><summary>The whole text</summary><pre>{_e(run.prompt)}</pre></details>"
    charts = [_probability_chart(run.tokens, "p(token read)")]
    if run.tokens:
        charts.append(svg_distribution(run))
    # No cost rows: they price generated tokens, and a read generated none.
    rows = (*read_rows(run), *((k, v) for k, v in problems(run) if v))
    return (
        f"{_heading(run)} · a text read through the model</p>{context}"
        f"<p><b>Text read</b> {_legend(scale)} unlikely → likely (hover a token)</p>"
        f"<div class='tokens'>{token_spans(run, scale)}</div>{whole}{_error(run)}"
        f"<div class='charts'>{''.join(charts)}</div>{_stats_table(rows)}"
    )


def _heading(run: RunLog) -> str:
    """The run's title and the start of its meta line (id, time, model), left open."""
    m = run.model or {}
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.started))
    return (
        f"<h2>{'★ ' if run.starred else ''}{_e(run.title)}</h2>"
        f"<p class='meta'>{_e(run.run_id)} · {_e(when)}"
        f" · {_e(model_name(m))} ({_e(m.get('quantization', '?'))}, {_e(m.get('device', '?'))})"
    )


def _probability_chart(tokens, label: str, marks=()) -> str:
    """The probability timeline (p and entropy per step); "" unless every step has both."""
    if not (tokens and all(t.prob is not None and t.entropy is not None for t in tokens)):
        return ""
    return svg_line_chart(
        "Probability timeline",
        [t.step for t in tokens],
        [([t.prob for t in tokens], "#4c78a8", label)],
        "step",
        "probability",
        y2=([t.entropy for t in tokens], "#72b7b2", "entropy"),
        marks=marks,
    )


def _stats_table(rows) -> str:
    return (
        "<table class='stats'>"
        + "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows)
        + "</table>"
    )


def _error(run: RunLog) -> str:
    return f"<p><b>Error:</b> {_e(run.error.message)}</p>" if run.error else ""


def _branch_line(run: RunLog) -> str:
    """ " · branch of run X at step K (chosen token | sampled)", or "" for a plain run."""
    b = run.branch
    if not b:
        return ""
    how = "a chosen token" if b.get("kind") == "forced" else "sampled"
    return f" · branch of run {_e(b['parent'])} at step {b['step']} ({how})"


def to_html(
    session: SessionLog, runs: list[RunLog] | None = None, scale: str = DEFAULT_SCALE
) -> str:
    """A self-contained HTML report of a session (no script, no external resource).

    Args:
        session: the session.
        runs: the runs to include; None: its visible runs.
        scale: the probability colour scale of the tokens (engine.display.prob_scale.SCALES).

    Returns:
        The whole HTML document.
    """
    runs = session.visible_runs if runs is None else runs
    from engine.sessions.export_tree import branches_html

    body = "".join(run_section(r, scale) for r in runs) or "<p>No runs.</p>"
    body += branches_html(runs, _e)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Logitscope · {_e(session.session_id)}</title><style>{CSS}</style></head>"
        f"<body><h1>Logitscope session {_e(session.session_id)}</h1>"
        f"<p class='meta'>{len(runs)} run(s)</p>{body}</body></html>\n"
    )
