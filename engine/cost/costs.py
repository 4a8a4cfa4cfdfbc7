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

from engine.store.settings_files import DamagedFile, number, read_json, report, set_aside

COST_FILE = "cost.json"
PRICES_FILE = "api_prices.json"
J_PER_KWH = 3.6e6
# About the US residential average in 2024 (EIA, Electric Power Monthly: ~16-17 ¢/kWh).
DEFAULT_PRICE_PER_KWH = 0.17
DEFAULT_CURRENCY = "USD"
COMPLETED = ("eos", "stop_string", "stop")  # an answer the model finished itself
# Bounds a figure must keep to be believed: no hosted API asks a million per million
# tokens, and these allow every currency's kWh price (IDR ~1,500) and any one machine.
MAX_PRICE_PER_MTOK = 1e6
MAX_PRICE_PER_KWH = 100_000.0
MAX_WATTS = 100_000.0


@dataclass(frozen=True)
class CostSettings:
    """The person's figures: electricity price (per kWh, in `currency`) and, if they
    know it, what their machine draws while it runs a model (None: the table's)."""

    price_per_kwh: float = DEFAULT_PRICE_PER_KWH
    currency: str = DEFAULT_CURRENCY
    watts: float | None = None

    def validate(self) -> CostSettings:
        """Raise ValueError (in words) for a price or watts that is not a number within
        bounds, or a bad currency."""
        number(self.price_per_kwh, "the price per kWh", MAX_PRICE_PER_KWH)
        if self.watts is not None:
            number(self.watts, "the watts", MAX_WATTS)
        if not isinstance(self.currency, str) or not 0 < len(self.currency) <= 8:
            raise ValueError("the currency must be a short code such as USD or EUR")
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
        try:
            c = (prompt_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6
        except OverflowError:  # token counts beyond any float (a damaged journal)
            return None
        return c if math.isfinite(c) else None


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
    from engine.store.paths import data_dir

    return data_dir() / name


def load_settings() -> CostSettings:
    """The person's cost settings, field by field: the default for each field that is
    missing or does not fit; any damage is said in words and the file kept as it is."""
    settings, damage = _read_settings()
    if damage:
        report(damage)
    return settings


def _read_settings() -> tuple[CostSettings, str | None]:
    """(the settings, the damage in words or None)."""
    path = _path(COST_FILE)
    try:
        data = read_json(path)
    except DamagedFile as e:
        data, bad = None, [str(e)]
    else:
        bad = [] if data is None or isinstance(data, dict) else ["not a JSON object"]
    out = CostSettings()
    for f in fields(CostSettings) if isinstance(data, dict) else ():
        if f.name in data and not (f.name == "watts" and data[f.name] is None):
            try:
                out = replace(out, **{f.name: data[f.name]}).validate()
            except ValueError as e:
                bad.append(str(e))
    if out.watts is not None:  # an int from the file: a float like every other figure
        out = replace(out, watts=float(out.watts))
    out = replace(out, price_per_kwh=float(out.price_per_kwh))
    if not bad:
        return out, None
    which = "the defaults stand in for those" if isinstance(data, dict) else "the defaults are used"
    return out, f"the cost settings {path} are damaged ({'; '.join(bad)}); {which}"


def save_settings(settings: CostSettings) -> None:
    """Keep `settings` (validated; written atomically; a damaged file is set aside)."""
    from engine.store.atomic import write_atomic

    settings.validate()
    _set_aside_if_damaged(COST_FILE)
    write_atomic(_path(COST_FILE), json.dumps(asdict(settings), indent=1))


def load_prices() -> list[ApiPrice]:
    """The API price table: the person's, or the shipped examples when there is none.

    Rows that do not fit (a missing name, a price that is not a number from 0 to
    MAX_PRICE_PER_MTOK) are left out; a file that cannot be read at all gives the
    examples. Either way the damage is said in words and the file kept as it is.
    """
    prices, damage = _read_prices()
    if damage:
        report(damage)
    return prices


def _read_prices() -> tuple[list[ApiPrice], str | None]:
    """(the table, the damage in words or None)."""
    path = _path(PRICES_FILE)
    try:
        rows = read_json(path)
    except DamagedFile as e:
        why = str(e)
    else:
        if rows is None:
            return list(EXAMPLE_PRICES), None
        if isinstance(rows, list):
            return _rows(rows, path)
        why = "not a JSON list of rows"
    damage = f"the API price table {path} is damaged ({why}); the examples are used"
    return list(EXAMPLE_PRICES), damage


def _rows(rows: list, path) -> tuple[list[ApiPrice], str | None]:
    out, bad = [], []
    for i, r in enumerate(rows, 1):
        try:
            out.append(price_row(r))
        except ValueError as e:
            bad.append(f"row {i}: {e}")
    if not bad:
        return out, None
    more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
    why = "; ".join(bad[:3]) + more
    return out, f"the API price table {path} is damaged ({why}); those rows are left out"


def price_row(d) -> ApiPrice:
    """One table row checked field by field.

    Raises:
        ValueError: which field does not fit, in words.
    """
    if not isinstance(d, dict):
        raise ValueError("not a JSON object")
    text = {}
    for name, most, default in _TEXT_FIELDS:
        v = d.get(name, default)
        if not isinstance(v, str) or (default is None and not v.strip()):
            raise ValueError(f"{name} is missing or not text")
        text[name] = v[:most]
    example = d.get("example", False)
    if not isinstance(example, bool):
        raise ValueError("example is not true or false")
    return ApiPrice(
        input_per_mtok=number(d.get("input_per_mtok"), "the input price", MAX_PRICE_PER_MTOK),
        output_per_mtok=number(d.get("output_per_mtok"), "the output price", MAX_PRICE_PER_MTOK),
        example=example,
        **text,
    )


# (field, most characters kept, default: None = required and not empty)
_TEXT_FIELDS = (
    ("provider", 80, ""),
    ("model", 120, None),
    ("currency", 8, "USD"),
    ("source", 300, ""),
    ("date", 20, ""),
)


def price_from_dict(d: dict) -> ApiPrice | None:
    """One table row checked field by field; None when it does not fit (price_row says why)."""
    try:
        return price_row(d)
    except ValueError:
        return None


def save_prices(prices: list[ApiPrice]) -> None:
    """Keep the person's table (atomically; a damaged file is set aside)."""
    from engine.store.atomic import write_atomic

    _set_aside_if_damaged(PRICES_FILE)
    write_atomic(_path(PRICES_FILE), json.dumps([asdict(p) for p in prices], indent=1))


def damage(name: str) -> str | None:
    """What is wrong with the cost file `name` (COST_FILE or PRICES_FILE), or None."""
    return (_read_prices if name == PRICES_FILE else _read_settings)()[1]


def _set_aside_if_damaged(name: str) -> None:
    """Rename a damaged `name` to `<name>.damaged` before a fresh one is written over it.

    Raises:
        WriteError: it could not be renamed (so nothing is written over it).
    """
    from engine.store.atomic import WriteError, describe_os_error

    if damage(name) is None:
        return
    path = _path(name)
    try:
        kept = set_aside(path)
    except OSError as e:
        raise WriteError(
            f"{describe_os_error(e, path)}; it is damaged and was left as it is"
        ) from e
    report(f"the damaged {path} was moved aside to {kept.name}; a fresh one is written")


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
    if value is None or not math.isfinite(value):
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
