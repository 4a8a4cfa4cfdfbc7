"""One convention for units on every screen and in every export.

A probability is written as a percentage by `fmt_prob`: one decimal from 0.1 % up,
its two significant digits below ("0.0085%", "8.5e-7%"), so a small share never
reads as "0.0%".

Bytes are shown in decimal units (1 MB = 10^6 bytes, as the OS file managers of
macOS and most Linux desktops do), and a value an engine did not report is
written "not reported", never 0. A limit set in powers of two (20 * 2**20 bytes) is
said in binary units, "20 MiB" (`binary_size`): a unit names its divisor, never the
other's.
"""

from __future__ import annotations

import math

NOT_REPORTED = "not reported"
BINARY_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def human_bytes(n: float | None) -> str:
    """1234567 -> '1.23 MB' (decimal units)."""
    if n is None:
        return NOT_REPORTED
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000
    return f"{n:.2f} GB"


def binary_size(n: int) -> str:
    """A limit set in powers of two, in binary units: 20 * 2**20 -> '20 MiB',
    2**30 -> '1 GiB', 1024 -> '1 KiB' (below that, bytes)."""
    for unit, size in BINARY_UNITS:
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:,} bytes"


def to_mb(n: float | None) -> float | None:
    """Bytes in MB (10^6: the one convention of every view and export)."""
    return None if n is None else n / 1e6


def fmt_mb(n: float | None) -> str:
    """Bytes as "12.3 MB" (decimal), or NOT_REPORTED for None."""
    return NOT_REPORTED if n is None else f"{n / 1e6:.1f} MB"


def fmt_or_na(value: float | None, spec: str, unit: str) -> str:
    """`value` formatted with its unit, or 'not reported'."""
    return NOT_REPORTED if value is None else f"{format(value, spec)} {unit}"


def fmt_prob(p: float) -> str:
    """A probability as a percentage, the one way every view and export writes it:
    one decimal from 0.1 % up (0.291 -> '29.1%'), two significant digits below
    (0.000085 -> '0.0085%', 0.0005 -> '0.050%'), in powers of ten under 0.0001 %
    (8.5e-9 -> '8.5e-7%'); exactly 0 -> '0%'. A tiny probability never reads as 0.0 %.
    """
    v = 100.0 * p
    if v == 0 or not math.isfinite(v):
        return f"{v:g}%"
    two = float(f"{v:.2g}")  # two significant digits, rounded as they will be shown
    if abs(two) >= 0.1:
        return f"{v:.1f}%"
    if abs(two) >= 1e-4:
        return f"{v:.{1 - math.floor(math.log10(abs(two)))}f}%"
    mantissa, exponent = f"{v:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}%"
