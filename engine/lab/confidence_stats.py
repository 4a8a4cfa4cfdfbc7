"""The confidence figures that need more than confidence_metrics gives: the AUROC's
bootstrap interval (NumPy, a fixed seed), the risk-coverage curve with its ties
averaged, and percentages rounded half up.

The AUROC's interval is a percentile bootstrap: `BOOTSTRAP` resamples of the set's
rows drawn with replacement (numpy.random.default_rng(seed).integers(0, n, (BOOTSTRAP,
n)), one draw for all of them), the AUROC of each resample that holds a right and a
wrong answer (the others are left out), and the 2.5th and 97.5th percentiles of those
(numpy.percentile's linear interpolation).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

BOOTSTRAP = 1000  # resamples
SEED = 0


def auroc_interval(
    scores: list[float], correct: list[bool], resamples: int = BOOTSTRAP, seed: int = SEED
) -> tuple[float, float] | None:
    """The AUROC's 95 % percentile-bootstrap interval (the module says how); None when
    the set lacks a right or a wrong answer or no resample holds both.

    A resample's AUROC is sum over (right i, wrong j) of w_i w_j g_ij over (right
    weight) x (wrong weight), w the rows' multiplicities in the resample and g_ij 1 when
    i scores above j, 1/2 on a tie: the Mann-Whitney count of the resampled rows.
    """
    import numpy as np  # here: every `logitscope` command imports this module for its
    # parser, and most never compute an interval (numpy's import is ~50 ms)

    s = np.asarray(scores, dtype=np.float64)
    c = np.asarray(correct, dtype=bool)
    n = len(s)
    if n == 0 or c.all() or not c.any():
        return None
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    flat = (np.arange(resamples)[:, None] * n + idx).ravel()
    w = np.bincount(flat, minlength=resamples * n).reshape(resamples, n).astype(np.float64)
    g = (s[:, None] > s[None, :]) + 0.5 * (s[:, None] == s[None, :])  # (n, n)
    g = g * (c[:, None] & ~c[None, :])  # right rows against wrong ones only
    pos = w @ c.astype(np.float64)  # (B,)
    neg = w.sum(axis=1) - pos
    num = ((w @ g) * w).sum(axis=1)  # (B,): sum over i, j of w_bi g_ij w_bj
    ok = (pos > 0) & (neg > 0)
    if not ok.any():
        return None
    values = num[ok] / (pos[ok] * neg[ok])
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def risk_coverage_ties_averaged(
    scores: list[float], correct: list[bool]
) -> tuple[tuple[float, float], ...]:
    """Accuracy when the model answers only its k most confident questions, k = 1..n:
    (coverage k/n, expected accuracy of those k when tied scores are put in random
    order). A tie group of g questions, r of them right, of which the first k take m
    contributes m x r / g right answers in expectation; so the question order does not
    change the curve.
    """
    n = len(scores)
    ranked = sorted(zip(scores, correct, strict=True), key=lambda p: -p[0])
    out: list[tuple[float, float]] = []
    right_before, i = 0, 0
    while i < n:
        j = i
        while j < n and ranked[j][0] == ranked[i][0]:
            j += 1
        g, r = j - i, sum(c for _, c in ranked[i:j])
        for m in range(1, g + 1):
            k = i + m
            out.append((k / n, (right_before + m * r / g) / k))
        right_before += r
        i = j
    return tuple(out)


def half_up(x: float, places: int = 0) -> str:
    """`x` with `places` decimals, a half rounded up (0.125 at 2 places -> "0.13"),
    from its shortest decimal form (repr), not its binary one."""
    q = Decimal(1).scaleb(-places)
    return str(Decimal(repr(float(x))).quantize(q, rounding=ROUND_HALF_UP))


def pct(share: float) -> str:
    """A share as a whole percentage rounded half up: 0.125 -> "13 %" (not "12 %")."""
    hundredths = Decimal(repr(float(share))) * 100
    return f"{hundredths.quantize(Decimal(1), rounding=ROUND_HALF_UP)} %"
