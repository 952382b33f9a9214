"""Default search times: seconds interpolated between measured (stops, seconds) points, flat
beyond the first and the last (no aiohttp). Each solver keeps its own points, with the
measurements behind them (`solver.TIME_LIMIT_POINTS`, `fleet.model.TIME_LIMIT_POINTS`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def interpolated_seconds(points: Sequence[tuple[int, float]], stops: int) -> float:
    stops_at, seconds = zip(*points, strict=True)
    return round(float(np.interp(stops, stops_at, seconds)), 3)
