"""Whether two sides' seeds separate: Welch's t-test on the gap (scipy's t distribution), its interval, and the rules
that cap a verdict resting on too few seeds.

- **Seeds.** A ✔ or ✘ on a value, contrast, parity or outcome needs at least `MIN_SEEDS` seeds on every side. With
  fewer, a result pointing the paper's way is capped at ↗ *direction only (n seeds)*, and one pointing the other way
  is *? too few seeds*.
- **Separation.** A contrast is ✔ only when the mean gap exceeds the tolerance *and* the sides separate: a one-sided
  Welch t-test of "the winner's seeds beat the loser's" at p < `ALPHA` (statistic and p printed beside the verdict).
  A mean gap past the tolerance whose seeds do not separate is *? not separated*.
- **Parity.** Two sides are on par (✔) when the 90 % Welch interval of their gap lies inside ± the tolerance (two
  one-sided tests at `ALPHA`); they are apart (✘) when the gap exceeds the tolerance and the sides separate
  (two-sided p < `ALPHA`); anything between is *? not separated*.
- **Outcomes over seeds.** "X succeeds" is judged per seed; the finding states how many seeds succeed, and a split
  (2 of 3) is *? split seeds*, never averaged into one side.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from scipy import stats

MIN_SEEDS = 3
ALPHA = 0.05
METHOD = "Welch t-test"


@dataclass(frozen=True)
class Separation:
    """Welch's test of a gap between two sides' seeds, on the entry's scale and in its direction (positive: the
    first side is better).

    Args:
        gap: the mean gap.
        statistic: Welch's t (infinite where both sides have no spread and differ).
        p_value: one-sided p of "the first side is better".
        interval: the two-sided (1 − 2·ALPHA) interval of the gap (90 %): the parity test's interval.
        seeds: (n first, n second).
        standard_error: the gap's standard error (0: neither side has spread).
    """

    gap: float
    statistic: float
    p_value: float
    interval: tuple[float, float]
    seeds: tuple[int, int]
    standard_error: float = 0.0

    @property
    def se_zero(self) -> bool:
        return self.standard_error == 0

    @property
    def separated(self) -> bool:
        return self.p_value < ALPHA

    @property
    def separated_either_way(self) -> bool:
        return min(self.p_value, 1 - self.p_value) < ALPHA / 2

    def text(self, parity: bool = False) -> str:
        """`Welch t = …, one-sided p = …, n = a vs b`; for a parity the 90 % interval of the gap instead of p."""
        t = "∞" if math.isinf(self.statistic) else f"{self.statistic:.2f}"
        if parity:
            low, high = self.interval
            return f"Welch 90 % interval of the gap [{low:.3g}, {high:.3g}], n = {self.seeds[0]} vs {self.seeds[1]}"
        return f"Welch t = {t}, one-sided p = {_p(self.p_value)}, n = {self.seeds[0]} vs {self.seeds[1]}"

    def as_json(self) -> dict:
        return {"method": METHOD, "statistic": _finite(self.statistic), "p_value": self.p_value,
                "interval": [self.interval[0], self.interval[1]], "confidence": 1 - 2 * ALPHA,
                "seeds": list(self.seeds)}  # fmt: skip


def welch(first: list[float], second: list[float]) -> Separation:
    """Welch's test of mean(first) − mean(second) > 0 (values already signed so that larger is better).

    One seed on a side has no spread: its variance is taken as the other side's (or 0), which makes a one-seed
    comparison no stronger than its counterpart's noise; the seed cap decides such verdicts anyway.
    """
    n1, n2 = len(first), len(second)
    if not n1 or not n2:
        raise ValueError(f"welch: a side has no values (n = {n1} vs {n2})")
    gap = statistics.fmean(first) - statistics.fmean(second)
    v1 = statistics.variance(first) if n1 > 1 else None
    v2 = statistics.variance(second) if n2 > 1 else None
    v1 = v1 if v1 is not None else (v2 or 0.0)
    v2 = v2 if v2 is not None else v1
    se2 = v1 / n1 + v2 / n2
    if se2 <= 0:  # no spread on either side: the gap is what it is
        p = 0.0 if gap > 0 else (1.0 if gap < 0 else 0.5)
        t = math.copysign(math.inf, gap) if gap else 0.0
        return Separation(gap, t, p, (gap, gap), (n1, n2))
    se = math.sqrt(se2)
    denominator = (v1 / n1) ** 2 / max(n1 - 1, 1) + (v2 / n2) ** 2 / max(n2 - 1, 1)
    df = se2**2 / denominator if denominator > 0 else float(max(n1 + n2 - 2, 1))
    t = gap / se
    p = float(stats.t.sf(t, df))
    half = float(stats.t.ppf(1 - ALPHA, df)) * se
    return Separation(gap, t, p, (gap - half, gap + half), (n1, n2), se)


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
