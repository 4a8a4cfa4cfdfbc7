"""Units: measured sizes in decimal MB; limits set in powers of two in MiB/GiB, so a
unit always names the divisor its figure was computed with."""

from __future__ import annotations

from engine.units import binary_size, fmt_mb, human_bytes


def test_limits_set_in_powers_of_two_are_said_in_binary_units():
    assert binary_size(20 * 2**20) == "20 MiB"
    assert binary_size(2**30) == "1 GiB"
    assert binary_size(1024) == "1 KiB"
    assert binary_size(3 * 2**19) == "1.5 MiB"
    assert binary_size(100) == "100 bytes"


def test_measured_sizes_stay_decimal():
    assert human_bytes(1_234_567) == "1.23 MB"
    assert fmt_mb(98_000_000) == "98.0 MB"
