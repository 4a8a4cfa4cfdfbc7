"""The token economy in money: what a million prompts of each language's sample would
cost on the price table's first hosted API (bars) and, where this machine's prefill
speed is known, in electricity here (the second bars), labelled estimated or not."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from app.charts.base import set_title
from app.core.theme import PROMPT
from engine.cost.costs import J_PER_KWH, load_prices, load_settings, money, prompt_costs
from engine.machine.power_table import cpu_name, typical_watts

LOCAL = "#16a34a"


def draw_cost(plot, bars: pg.BarGraphItem, local: pg.BarGraphItem, table: dict, prefill_tps):
    """Draw the cost bars for `table` (token_explorer.economy) on `plot`."""
    settings = load_settings()
    prices = load_prices()
    api = prices[0] if prices else None
    watts = settings.watts or typical_watts("CPU", cpu_name())[0]
    names = list(table)
    tokens = {n: table[n]["tokens"] for n in names}
    found = prompt_costs(tokens, api, 1 / prefill_tps if prefill_tps else None, watts)
    x = np.arange(len(names), dtype=float)
    hosted = np.array([found[n]["api"] or 0.0 for n in names])
    here = np.array(
        [(found[n]["local_j"] or 0.0) / J_PER_KWH * settings.price_per_kwh for n in names]
    )
    both = prefill_tps is not None
    bars.setOpts(x=x - (0.2 if both else 0), height=hosted, width=0.4 if both else 0.7)
    local.setOpts(x=x + 0.2, height=here if both else np.zeros(0), width=0.4)
    if not both:
        local.setOpts(x=np.zeros(0))
    plot.getAxis("bottom").setTicks([[(i, n) for i, n in enumerate(names)]])
    top = max(hosted.max(initial=0), here.max(initial=0) if both else 0) or 1.0
    plot.setRange(xRange=(-0.6, len(names) - 0.4), yRange=(0, top * 1.1), padding=0)
    worst = names[int(hosted.argmax())] if api else names[0]
    what = (
        f"<span style='color:{PROMPT}'>■</span> {api.provider} {api.model} input "
        f"({'example price, ' + api.date + ': check' if api.example else 'your price'})"
        if api
        else "no API price in the table"
    )
    if both:
        what += (
            f" · <span style='color:{LOCAL}'>■</span> electricity here (estimated from {watts:g} W)"
        )
    base = found.get("English", {}).get("api")
    times = f", {found[worst]['api'] / base:.1f}× English" if api and base else ""
    sub = f"{what}<br>{worst}: {money(found[worst]['api'], api.currency if api else '')}{times}"
    set_title(plot, "Token economy: a million prompts of the same sentence", sub)
    unit = api.currency if api else settings.currency
    plot.setLabel("left", f"per 1M prompts ({unit})", **{"font-size": "8pt"})
