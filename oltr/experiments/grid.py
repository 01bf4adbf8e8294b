"""Parameter grids and checkpoint schedules of an experiment file."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from oltr.experiments.regret import log_checkpoints

__all__ = ["checkpoint_schedule", "expand_grid"]


def checkpoint_schedule(
    horizon: int, *, every: int | None = None, log: int | None = None
) -> tuple[int, ...]:
    """Rounds (1-based, increasing, ending at ``horizon``) at which the trace is recorded.

    ``every=k`` gives k, 2k, … and the horizon; ``log=n`` gives min(n, horizon)
    distinct log-spaced rounds from 1 to the horizon
    (:func:`oltr.experiments.regret.log_checkpoints`).

    >>> checkpoint_schedule(10, every=4)
    (4, 8, 10)
    >>> checkpoint_schedule(1000, log=4)
    (1, 10, 100, 1000)
    """
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    if (every is None) == (log is None):
        raise ValueError("give exactly one of every= or log=")
    if every is not None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        points = list(range(every, horizon + 1, every))
        if not points or points[-1] != horizon:
            points.append(horizon)
        return tuple(points)
    assert log is not None
    return log_checkpoints(horizon, log)


def expand_grid(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """All parameter settings of a learner entry: the product of its list-valued params.

    >>> expand_grid({"eta": [0.1, 0.2], "k": 1})
    [{'eta': 0.1, 'k': 1}, {'eta': 0.2, 'k': 1}]
    >>> expand_grid({"w": [[1, 0]]})   # a list-valued parameter, wrapped once more
    [{'w': [1, 0]}]
    """
    keys = list(params)
    choices = [v if isinstance(v, list) else [v] for v in params.values()]
    for key, options in zip(keys, choices, strict=True):
        if not options:
            raise ValueError(
                f"{key}: an empty list gives no settings (to pass an empty list, write [[]])"
            )
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*choices)]
