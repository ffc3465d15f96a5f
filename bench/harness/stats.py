"""Latency summaries: percentiles with linear interpolation between order statistics."""

from __future__ import annotations

import math
from typing import Optional, Sequence


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100) of already sorted values, interpolating between neighbours
    (the method numpy calls 'linear')."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} outside 0..100")
    rank = (len(sorted_values) - 1) * p / 100.0
    lo = math.floor(rank)
    hi = math.ceil(rank)
    if lo == hi:
        return float(sorted_values[lo])
    frac = rank - lo
    return sorted_values[lo] * (1 - frac) + sorted_values[hi] * frac


def summarize_ns(samples_ns: Sequence[int]) -> Optional[dict]:
    """n, p50, p90, p99, mean, min, max in milliseconds; None when there are no samples."""
    if not samples_ns:
        return None
    ms = sorted(s / 1e6 for s in samples_ns)
    return {
        "n": len(ms),
        "p50": percentile(ms, 50),
        "p90": percentile(ms, 90),
        "p99": percentile(ms, 99),
        "mean": sum(ms) / len(ms),
        "min": ms[0],
        "max": ms[-1],
    }
