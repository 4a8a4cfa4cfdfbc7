"""Units: measured sizes in decimal MB; limits set in powers of two in MiB/GiB, so a
unit always names the divisor its figure was computed with."""

from __future__ import annotations

from engine.display.units import binary_size, fmt_mb, human_bytes


def test_limits_set_in_powers_of_two_are_said_in_binary_units():
    assert binary_size(20 * 2**20) == "20 MiB"
    assert binary_size(2**30) == "1 GiB"
    assert binary_size(1024) == "1 KiB"
    assert binary_size(3 * 2**19) == "1.5 MiB"
    assert binary_size(100) == "100 bytes"


def test_measured_sizes_stay_decimal():
    assert human_bytes(1_234_567) == "1.23 MB"
    assert fmt_mb(98_000_000) == "98.0 MB"


def _shown(p: float) -> float:
    """The probability a person reads back from fmt_prob's text."""
    from engine.display.units import fmt_prob

    text = fmt_prob(p)
    assert text.endswith("%") and text.count("%") == 1
    return float(text[:-1]) / 100


def test_a_probability_keeps_its_significant_digits():
    import numpy as np

    from engine.display.units import fmt_prob

    assert fmt_prob(0.2908) == "29.1%" and fmt_prob(1.0) == "100.0%"
    assert fmt_prob(0.000085) == "0.0085%"  # the read's ' never', rank 803, not "0.0%"
    assert fmt_prob(0.0005) == "0.050%" and fmt_prob(0.00123) == "0.1%"
    assert fmt_prob(8.5e-9) == "8.5e-7%" and fmt_prob(0.0) == "0%"
    # From 1e-12 to 1: what is read back is the probability to its shown digits: one
    # decimal of a percentage from 0.1 % up, two significant digits below, never 0.
    edges = [0.000999, 0.00099949, 0.0000995, 9.96e-7, 9.9999e-7, 1e-6]  # where rounding carries
    assert fmt_prob(0.000999) == "0.1%" and fmt_prob(9.96e-7) == "0.00010%"
    for p in [*np.geomspace(1e-12, 1.0, 2001), *edges]:
        back = _shown(float(p))
        if back >= 0.001:
            assert abs(back - p) <= 0.0005 + 1e-12, (p, fmt_prob(p))
        else:
            assert back > 0 and abs(back - p) <= 0.05 * p * (1 + 1e-9), (p, fmt_prob(p))
            digits = fmt_prob(p)[:-1].split("e")[0].replace(".", "").lstrip("0")
            assert len(digits) == 2, (p, fmt_prob(p))  # two significant digits
