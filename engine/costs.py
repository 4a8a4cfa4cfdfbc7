"""What a run costs: the person's electricity price and watts, the editable table of
hosted-API prices, and the arithmetic that turns a run's energy and tokens into money.

Both live as JSON in the data folder (`cost.json`, `api_prices.json`), read and
written here only, so the command line, the engine process and the window agree.
Qt-free and MLX-free. A figure that cannot be known is None, never invented.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields, replace

COST_FILE = "cost.json"
PRICES_FILE = "api_prices.json"
J_PER_KWH = 3.6e6
# About the US residential average in 2024 (EIA, Electric Power Monthly: ~16-17 ¢/kWh).
DEFAULT_PRICE_PER_KWH = 0.17
DEFAULT_CURRENCY = "USD"
COMPLETED = ("eos", "stop_string", "stop")  # an answer the model finished itself


@dataclass(frozen=True)
class CostSettings:
    """The person's figures: electricity price (per kWh, in `currency`) and, if they
    know it, what their machine draws while it runs a model (None: the table's)."""

    price_per_kwh: float = DEFAULT_PRICE_PER_KWH
    currency: str = DEFAULT_CURRENCY
    watts: float | None = None

    def validate(self) -> CostSettings:
        """Raise ValueError for a negative or non-finite price or watts, or a bad currency."""
        for name, v in (("price_per_kwh", self.price_per_kwh), ("watts", self.watts)):
            if v is not None and (not isinstance(v, int | float) or not math.isfinite(v) or v < 0):
                raise ValueError(f"{name} must be a number of at least 0")
        if not isinstance(self.currency, str) or not 0 < len(self.currency) <= 8:
            raise ValueError("currency must be a short code such as USD or EUR")
        return self


@dataclass(frozen=True)
class ApiPrice:
    """One hosted model's price per million tokens, with where it comes from."""

    provider: str
    model: str
    input_per_mtok: float
    output_per_mtok: float
    currency: str = "USD"
    source: str = ""
    date: str = ""  # when the price was read (YYYY-MM)
    example: bool = True  # shipped with Logitscope: check it before relying on it

    def cost(self, prompt_tokens: int | None, output_tokens: int) -> float | None:
        """What `prompt_tokens` in and `output_tokens` out would cost (None: prompt unknown)."""
        if prompt_tokens is None:
            return None
        return (prompt_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


# Examples to check: prices change; each row says where and when it was read.
_OPENAI, _ANTHROPIC = "openai.com/api/pricing", "anthropic.com/pricing"
_GOOGLE = "ai.google.dev/gemini-api/docs/pricing"
EXAMPLE_PRICES = (
    ApiPrice("OpenAI", "gpt-4o-mini", 0.15, 0.60, source=_OPENAI, date="2024-07"),
    ApiPrice("OpenAI", "gpt-4o", 2.50, 10.00, source=_OPENAI, date="2024-10"),
    ApiPrice("Anthropic", "claude-3-5-haiku", 0.80, 4.00, source=_ANTHROPIC, date="2024-11"),
    ApiPrice("Google", "gemini-1.5-flash", 0.075, 0.30, source=_GOOGLE, date="2024-10"),
)


def _path(name: str):
    from engine.paths import data_dir

    return data_dir() / name


def load_settings() -> CostSettings:
    """The person's cost settings; the defaults where there are none or they are unreadable."""
    try:
        d = json.loads(_path(COST_FILE).read_text())
        known = {f.name for f in fields(CostSettings)}
        return CostSettings(**{k: v for k, v in d.items() if k in known}).validate()
    except (OSError, ValueError, TypeError, AttributeError):
        return CostSettings()


def save_settings(settings: CostSettings) -> None:
    """Keep `settings` (validated; written atomically)."""
    from engine.atomic import write_atomic

    write_atomic(_path(COST_FILE), json.dumps(asdict(settings.validate()), indent=1))


def load_prices() -> list[ApiPrice]:
    """The API price table: the person's, or the shipped examples when there is none.

    Rows that do not fit (a missing name, a negative price) are left out.
    """
    try:
        rows = json.loads(_path(PRICES_FILE).read_text())
    except (OSError, ValueError):
        return list(EXAMPLE_PRICES)
    return [p for p in (price_from_dict(r) for r in rows if isinstance(r, dict)) if p]


def price_from_dict(d: dict) -> ApiPrice | None:
    """One table row checked field by field; None when it does not fit."""
    try:
        p = ApiPrice(
            provider=str(d["provider"])[:80],
            model=str(d["model"])[:120],
            input_per_mtok=float(d["input_per_mtok"]),
            output_per_mtok=float(d["output_per_mtok"]),
            currency=str(d.get("currency", "USD"))[:8],
            source=str(d.get("source", ""))[:300],
            date=str(d.get("date", ""))[:20],
            example=bool(d.get("example", False)),
        )
    except (KeyError, TypeError, ValueError):
        return None
    ok = all(math.isfinite(v) and v >= 0 for v in (p.input_per_mtok, p.output_per_mtok))
    return p if ok and p.model else None


def save_prices(prices: list[ApiPrice]) -> None:
    """Keep the person's table (atomically)."""
    from engine.atomic import write_atomic

    write_atomic(_path(PRICES_FILE), json.dumps([asdict(p) for p in prices], indent=1))


def electricity_cost(energy_j: float | None, price_per_kwh: float) -> float | None:
    """Money for `energy_j` joules at `price_per_kwh` (None: energy unknown)."""
    return None if energy_j is None else energy_j / J_PER_KWH * price_per_kwh


def joules_per_token(energy_j: float | None, tokens: int) -> float | None:
    """Energy per generated token (None: energy unknown or no token)."""
    return energy_j / tokens if energy_j is not None and tokens > 0 else None


def wh_per_1000(energy_j: float | None, tokens: int) -> float | None:
    """Watt-hours per 1,000 generated tokens (None: energy unknown or no token)."""
    per = joules_per_token(energy_j, tokens)
    return None if per is None else per * 1000 / 3600


def with_cost(done, energy_j: float | None, source: str | None, settings: CostSettings):
    """`done` (a DoneRecord) with its energy and its electricity cost filled in."""
    cost = electricity_cost(energy_j, settings.price_per_kwh)
    return replace(
        done,
        energy_j=energy_j,
        energy_source=source,
        cost=cost,
        cost_currency=settings.currency if cost is not None else None,
    )


def money(value: float | None, currency: str | None) -> str:
    """An amount with enough digits to see a fraction of a cent: '0.000012 USD'."""
    if value is None:
        return "not known"
    small = 0 < value < 1
    digits = min(10, 2 - math.floor(math.log10(value))) if small else 2  # 3 significant
    return f"{value:.{digits}f} {currency or ''}".strip()


def prompt_costs(
    tokens: dict[str, int], api: ApiPrice | None, seconds_per_token: float | None, watts: float
) -> dict[str, dict]:
    """What a million prompts of each language's sample would cost (the token economy).

    Args:
        tokens: language -> the sample's token count.
        api: a hosted price row (its input price is used), or None.
        seconds_per_token: this machine's prefill time per token (None: not measured).
        watts: the power to turn that time into energy.

    Returns:
        language -> {"api": money or None, "local_j": joules per million prompts or None}.
    """
    return {
        lang: {
            "api": n * api.input_per_mtok if api else None,  # n tokens x 1M prompts / 1M
            "local_j": n * seconds_per_token * watts * 1e6 if seconds_per_token else None,
        }
        for lang, n in tokens.items()
    }
