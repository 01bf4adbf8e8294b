"""The built-in demonstration's fixed-ranker table."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from oltr.cli import app
from oltr.data.synthetic import synthetic_letor
from oltr.metrics import get_measure
from oltr.reproductions.demo import DEMO_MEASURES, score_fixed_rankers


def test_ideal_order_is_best_under_every_measure_and_the_hidden_model_beats_random():
    table = score_fixed_rankers(synthetic_letor(n_queries=60, rng=3), rng=3)
    values = table.astype(float)
    ideal = values.loc["ideal (sort by true relevance)"]
    for m in DEMO_MEASURES:
        sign = get_measure(m).sign
        # Sorting by the true grades is optimal for each of these measures.
        assert np.all(sign * values[m] <= sign * ideal[m] + 1e-12), m
        # The generator's own linear model must rank far better than chance.
        assert sign * values.loc["hidden linear model", m] > sign * values.loc["random", m], m


def test_demo_command_prints_data_summary_and_measure_table():
    result = CliRunner().invoke(app, ["demo", "--no-online", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "queries" in result.output and "documents" in result.output
    for m in DEMO_MEASURES:
        assert m in result.output
