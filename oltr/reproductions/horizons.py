"""Regret rates across horizons: final regret R_T for several T, and its exponent in T.

Chaudhuri & Tewari (2015) prove ``R_T = O(T^{2/3})`` for RTop-1F (Theorems 7,
9, 10) and FTPL has ``O(T^{1/2})`` with full information (Kalai & Vempala
2005). Both bounds hold for schedules tuned to the horizon: ``K`` and ``ε``
depend on ``T``, so within one run the exploration share ``mK/T = m^{2/3} T^{-1/3}``
is fixed and the curve ``t ↦ R_t`` of a single run is not the rate. The rate is
read across horizons instead: run each learner to ``T`` for several ``T``
(each with its own schedule), and fit ``log R_T`` on ``log T``
(:func:`oltr.experiments.regret.regret_exponent`).

Run from the command line::

    python -m oltr.reproductions.horizons --horizons 1000 3000 10000 30000 100000 --reps 5

References
----------
Chaudhuri & Tewari 2015, Theorems 7, 9, 10 and §10; Kalai & Vempala 2005.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from oltr.experiments.regret import regret_exponent
from oltr.experiments.runner import RunSetSpec, run_set

__all__ = [
    "CT15_SETTINGS",
    "THEORY",
    "Setting",
    "final_regrets",
    "horizon_exponents",
    "main",
    "tail_exponent",
]


@dataclass(frozen=True)
class Setting:
    """One learner with its feedback model and parameters."""

    learner: str
    feedback: str
    feedback_params: dict[str, Any] = field(default_factory=dict)
    learner_params: dict[str, Any] = field(default_factory=dict)


#: The two learners of C&T 2015 Fig. 2, with their theoretical exponents.
CT15_SETTINGS: dict[str, Setting] = {
    "RTop-1F (top-1)": Setting("rtop1f", "top-k", {"k": 1}, {"measure": "dcg"}),
    "FTPL (full)": Setting("ftpl", "full", {}, {"measure": "dcg"}),
}
THEORY = {"RTop-1F (top-1)": "<= 2/3", "FTPL (full)": "<= 1/2"}


def final_regrets(
    settings: Mapping[str, Setting],
    horizons: Sequence[int],
    *,
    env: str = "ct15-sim-v1",
    env_params: Mapping[str, Any] | None = None,
    reps: int = 5,
    seed: int = 20150509,
    measure: str = "dcg",
) -> pd.DataFrame:
    """Final cumulative regret ``R_T`` of every setting at every horizon and repetition.

    Each (setting, T) is a separate run set with horizon ``T`` (so schedules
    that depend on ``T`` are tuned to it); the environment sequence is keyed
    by ``seed`` and shared by all of them.

    Returns
    -------
    DataFrame with columns ``label``, ``T``, ``rep``, ``regret``.
    """
    rows = []
    for label, s in settings.items():
        for horizon in horizons:
            spec = RunSetSpec(
                env=env,
                env_params=dict(env_params or {}),
                feedback=s.feedback,
                feedback_params=dict(s.feedback_params),
                learner=s.learner,
                learner_params=dict(s.learner_params),
                reps=tuple(range(reps)),
                seed=seed,
                horizon=int(horizon),
                measures=(measure,),
                checkpoints=(int(horizon),),
            )
            df = run_set(spec)
            for rep, regret in zip(df["rep"], df[f"{measure}:regret"], strict=True):
                rows.append(
                    {"label": label, "T": int(horizon), "rep": int(rep), "regret": float(regret)}
                )
    return pd.DataFrame(rows, columns=["label", "T", "rep", "regret"])


def horizon_exponents(results: pd.DataFrame) -> pd.DataFrame:
    """Fit ``log mean R_T`` on ``log T`` per label: the across-horizon regret exponent.

    Returns
    -------
    DataFrame indexed by label with ``exponent`` and ``stderr``.
    """
    out = {}
    for label, group in results.groupby("label", sort=False):
        mean = group.groupby("T")["regret"].mean()
        slope, err = regret_exponent(mean.index.to_numpy(float), mean.to_numpy())
        out[label] = {"exponent": slope, "stderr": err}
    return pd.DataFrame.from_dict(out, orient="index")


def tail_exponent(
    trace: pd.DataFrame, measure: str = "dcg", *, t_min: int = 1000
) -> tuple[float, float]:
    """Within-run exponent of the mean regret curve from ``t_min`` on (C&T 2015 Fig. 2).

    ``trace`` is a :func:`~oltr.experiments.runner.run_set` trace (one learner).
    """
    mean = trace.groupby("t")[f"{measure}:regret"].mean()
    return regret_exponent(mean.index.to_numpy(float), mean.to_numpy(), t_min=t_min)


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    """Command line: run the across-horizon study of C&T 2015 and print the exponents."""
    parser = argparse.ArgumentParser(
        prog="python -m oltr.reproductions.horizons", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--horizons", type=int, nargs="+", default=[1000, 3000, 10_000, 30_000, 100_000]
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20150509)
    parser.add_argument("--n-items", type=int, default=10)
    args = parser.parse_args(argv)
    results = final_regrets(
        CT15_SETTINGS,
        args.horizons,
        env_params={"n_items": args.n_items},
        reps=args.reps,
        seed=args.seed,
    )
    table = results.groupby(["label", "T"], sort=False)["regret"].agg(["mean", "std"])
    print(table.to_string(float_format=lambda x: f"{x:.1f}"))
    fits = horizon_exponents(results)
    fits["theory"] = [THEORY.get(str(label), "") for label in fits.index]
    print(fits.to_string(float_format=lambda x: f"{x:.3f}"))
    return fits


if __name__ == "__main__":  # pragma: no cover
    main()
