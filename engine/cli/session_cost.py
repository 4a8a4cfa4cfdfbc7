"""`logitscope sessions --cost`: what each session's runs took in energy and money,
summed, beside what the same tokens would have cost on the price table's hosted APIs."""

from __future__ import annotations

import math

from engine.cost.costs import ApiPrice, money
from engine.cost.run_cost import api_label


def _finite(v) -> float | None:
    """`v` if it is a finite number, else None: `--json` must stay JSON (no NaN, no
    Infinity) whatever a journal holds."""
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    return v if ok else None


def run_fields(r) -> dict:
    """A run's energy and cost fields for `--json` (None where not known)."""
    d = r.done
    return {
        "energy_j": _finite(getattr(d, "energy_j", None)) if d else None,
        "energy_source": getattr(d, "energy_source", None) if d else None,
        "cost": _finite(getattr(d, "cost", None)) if d else None,
        "cost_currency": getattr(d, "cost_currency", None) if d else None,
    }


def totals(runs, prices: list[ApiPrice]) -> dict:
    """A session's sums over its finished runs.

    Args:
        runs: the session's runs (RunLog).
        prices: the API price table.

    Returns:
        {"runs", "with_energy", "energy_j", "estimated", "cost" {currency: amount},
        "prompt_tokens", "generated_tokens", "api" [{provider, model, example, cost,
        currency}]}; runs without energy (remote, older) are counted but add none.
    """
    done = [r.done for r in runs if r.done is not None]
    known = [d for d in done if _finite(getattr(d, "energy_j", None)) is not None]
    cost: dict[str, float] = {}
    for d in known:
        if _finite(d.cost) is not None:
            cost[d.cost_currency or ""] = cost.get(d.cost_currency or "", 0.0) + d.cost
    prompt = sum(d.prompt_tokens or 0 for d in done)
    out = sum(d.generated_tokens for d in done)
    return {
        "runs": len(done),
        "with_energy": len(known),
        "energy_j": sum(d.energy_j for d in known) if known else None,
        "estimated": sum(not (d.energy_source or "").startswith("measured") for d in known),
        "cost": cost,
        "prompt_tokens": prompt,
        "generated_tokens": out,
        "api": [
            {
                "provider": p.provider,
                "model": p.model,
                "example": p.example,
                "cost": _finite(p.cost(prompt, out)),
                "currency": p.currency,
            }
            for p in prices
        ],
    }


def lines(t: dict, prices: list[ApiPrice]) -> list[str]:
    """The totals in words, indented under the session's line."""
    if t["energy_j"] is None:
        energy = "energy not known (remote runs, or recorded before energy was)"
    else:
        est = f", {t['estimated']} estimated" if t["estimated"] else ", all measured"
        wh = t["energy_j"] / 3600
        energy = f"{t['energy_j']:.3g} J = {wh:.3g} Wh over {t['with_energy']} run(s){est}"
    spent = " + ".join(money(v, c) for c, v in t["cost"].items()) or "not known"
    out = [
        f"    cost: {energy}; electricity {spent}",
        f"    tokens: {t['prompt_tokens']} prompt + {t['generated_tokens']} generated; "
        "the same tokens hosted:",
    ]
    for p, a in zip(prices, t["api"], strict=True):
        out.append(f"      {api_label(p)}: {money(a['cost'], a['currency'])}")
    return out
