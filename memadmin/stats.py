"""Pure statistics shared by the dashboard's figures and the bench.

One percentile definition everywhere: linear interpolation between the two closest
ranks, PostgreSQL's ``percentile_cont``. The figures computed in Python
(``sweeper.metrics``, the bench) thus agree with those computed in SQL
(``records.selectors.overview``, whose SQLite fallback picks the two neighbours in SQL
and interpolates with ``interpolate``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def interpolate(low: float, high: float | None, position: float) -> float:
    """The value at fractional rank ``position`` between its neighbours ``low`` (at
    floor(position)) and ``high`` (the next rank; None if there is none)."""
    fraction = position - math.floor(position)
    if high is None or fraction == 0:
        return float(low)
    return float(low) + fraction * (float(high) - float(low))


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, in any order. No values: 0.0."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = (len(ordered) - 1) * q
    return interpolate(ordered[math.floor(position)], ordered[math.ceil(position)], position)
