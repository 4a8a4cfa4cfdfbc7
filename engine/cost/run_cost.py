"""One run's economics, as every view words it: energy (and how it was found), energy
per generated token, electricity money, and what the same tokens would cost on the
hosted APIs of the person's price table. The status line, the `?` explanation,
Compare, the exports and `logitscope sessions --cost` all read it from here."""

from __future__ import annotations

from dataclasses import dataclass

from engine.cost.costs import ApiPrice, joules_per_token, load_prices, money, wh_per_1000


@dataclass(frozen=True)
class RunCost:
    """A run's cost figures; None where not known (a remote run has no local energy)."""

    energy_j: float | None
    energy_source: str | None
    j_per_token: float | None
    wh_per_1000: float | None
    cost: float | None
    currency: str | None
    api: tuple[tuple[ApiPrice, float | None], ...]  # each table row and the run's price there


def run_cost(done, prices: list[ApiPrice] | None = None) -> RunCost:
    """The figures of a DoneRecord (older records without energy give None).

    Args:
        done: the run's DoneRecord.
        prices: the API table; None: the person's (engine/cost/costs.py).

    Returns:
        Its RunCost.
    """
    energy = getattr(done, "energy_j", None)
    n = done.generated_tokens
    table = load_prices() if prices is None else prices
    return RunCost(
        energy_j=energy,
        energy_source=getattr(done, "energy_source", None),
        j_per_token=joules_per_token(energy, n),
        wh_per_1000=wh_per_1000(energy, n),
        cost=getattr(done, "cost", None),
        currency=getattr(done, "cost_currency", None),
        api=tuple((p, p.cost(done.prompt_tokens, n)) for p in table),
    )


def short(rc: RunCost) -> str:
    """The status line's part: '≈ 0.41 J/token (estimated from 10 W)', or ''."""
    if rc.j_per_token is None:
        return ""
    how = "" if (rc.energy_source or "").startswith("measured") else f" ({rc.energy_source})"
    return f"≈ {rc.j_per_token:.2g} J/token{how}"


def api_label(p: ApiPrice) -> str:
    """'on OpenAI gpt-4o-mini (example price, 2024-07: check)'."""
    note = f"example price, {p.date}: check" if p.example else f"your price, {p.date or 'undated'}"
    return f"on {p.provider} {p.model} ({note})"


def rows(rc: RunCost) -> list[tuple[str, str]]:
    """(label, text) rows for a report: energy, per token, electricity, each API price."""
    if rc.energy_j is None:
        out = [("energy", "not known (a remote run, or recorded before energy was)")]
    else:
        out = [
            ("energy", f"{rc.energy_j:.3g} J ({rc.energy_source})"),
            (
                "energy per token",
                f"{rc.j_per_token:.3g} J/token · {rc.wh_per_1000:.3g} Wh per 1,000 tokens"
                if rc.j_per_token is not None
                else "no token generated",
            ),
            ("electricity", money(rc.cost, rc.currency)),
        ]
    return out + [(api_label(p), money(c, p.currency)) for p, c in rc.api]
