"""A small version of the oltr-clicks reproduction on real MQ2008 data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oltr.experiments.clicks_reproduction import run_oltr_clicks, summarize


@pytest.mark.shared_data
def test_small_reproduction_learners_beat_random(shared_data: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # 3 runs × 600 impressions of MQ2008 Fold1 with perfect clicks (fixed seeds). PDGD
    # reaches held-out NDCG@10 far above the random ranker's (~0.45 on MQ2008); a margin
    # of 0.1 is several times the 95% interval of 3 random-ranker runs.
    monkeypatch.setenv("OLTR_DATA_DIR", str(shared_data))
    finals, curves = run_oltr_clicks(
        datasets={"MQ2008": (1,)},
        runs=3,
        horizon=600,
        learners=("PDGD", "P-DBGD", "random"),
        click_models=("perfect",),
    )
    table = summarize(finals).set_index("learner")
    assert table.loc["PDGD", "offline"] > table.loc["random", "offline"] + 0.1
    assert table.loc["P-DBGD", "offline"] > table.loc["random", "offline"]
    assert table.loc["PDGD", "online"] > table.loc["random", "online"]
    assert set(curves["impressions"]) >= {1, 600}
    assert np.isfinite(table["offline_ci"]).all()


@pytest.mark.shared_data
def test_worker_processes_give_the_same_frames(shared_data: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Every cell draws from its own keyed generators: 2 worker processes, same numbers.
    monkeypatch.setenv("OLTR_DATA_DIR", str(shared_data))
    kw = {
        "datasets": {"MQ2008": (1,)},
        "runs": 2,
        "horizon": 50,
        "learners": ("PDGD (neural)", "P-MGD", "TD-DBGD"),
        "click_models": ("informational",),
    }
    serial = run_oltr_clicks(**kw)  # type: ignore[arg-type]
    parallel = run_oltr_clicks(**kw, n_jobs=2)  # type: ignore[arg-type]
    for a, b in zip(serial, parallel, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
