"""Tests of the C&T 2015 §10 simulation environment and the file-backed relevance sequence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from oltr.envs.adversaries import CT15SimulationEnv, RelevanceFileEnv, read_relevance
from oltr.metrics import dcg, sum_loss
from oltr.permutations import all_orders

ALPHA = 1e-3


def _rounds(env: CT15SimulationEnv | RelevanceFileEnv, n: int, seed: int = 0) -> np.ndarray:
    env.reset(rng=seed)
    out = []
    for t in range(1, n + 1):
        env.observe(t)
        out.append(np.array(env._ground_truth()))
    return np.stack(out)


# ---------------------------------------------------------------------------
# §10 simulation


def test_true_vector_has_half_relevant_items() -> None:
    for seed in range(5):
        env = CT15SimulationEnv(n_items=10)
        env.reset(rng=seed)
        v = env.true_relevance_
        assert sorted(v.tolist()) == [0] * 5 + [1] * 5


def test_flip_rates_match_gaussian_threshold() -> None:
    # binary rule r = 1(v + σ z >= θ): P(0 -> 1) = Φ(-θ/σ), P(1 -> 0) = Φ(-(1-θ)/σ)
    sigma, theta, n_rounds = 0.4, 0.3, 3000
    env = CT15SimulationEnv(
        n_items=6, noise=sigma, threshold=theta, true_relevance=[1, 1, 1, 0, 0, 0]
    )
    r = _rounds(env, n_rounds)
    n = 3 * n_rounds
    up, down = int(r[:, 3:].sum()), int((1 - r[:, :3]).sum())
    assert stats.binomtest(up, n, stats.norm.cdf(-theta / sigma)).pvalue > ALPHA
    assert stats.binomtest(down, n, stats.norm.cdf(-(1 - theta) / sigma)).pvalue > ALPHA


def test_default_noise_flip_rate_is_documented_value() -> None:
    env = CT15SimulationEnv(n_items=10)
    r = _rounds(env, 4000, seed=1)
    flips = int((r != env.true_relevance_).sum())
    assert stats.binomtest(flips, r.size, 0.02275).pvalue > ALPHA  # Φ(-2)


def test_graded_variant_rounds_noisy_grade() -> None:
    # v = 2, σ = 0.5, θ = 0.5: r = clip(round(2 + σ z), 0, 3):
    # P(r = 3) = P(z >= 1) = 0.1587, P(r = 1) = P(z < -1) = 0.1587, P(r = 0) = P(z < -3)
    env = CT15SimulationEnv(n_items=2, max_grade=3, noise=0.5, true_relevance=[2, 0])
    r = _rounds(env, 4000)[:, 0]
    p_hi = stats.norm.sf(1.0)
    assert stats.binomtest(int((r == 3).sum()), r.size, p_hi).pvalue > ALPHA
    assert stats.binomtest(int((r == 1).sum()), r.size, p_hi).pvalue > ALPHA
    assert r.min() >= 0 and r.max() <= 3


def test_graded_true_vector_draws_grades_one_to_n() -> None:
    env = CT15SimulationEnv(n_items=40, max_grade=3, noise=0.0)
    r = _rounds(env, 3, seed=2)
    v = env.true_relevance_
    assert (v > 0).sum() == 20 and set(v[v > 0].tolist()) == {1, 2, 3}
    assert (r == v).all()  # σ = 0: every round is the true vector


def test_oblivious_one_sequence_per_seed() -> None:
    a = _rounds(CT15SimulationEnv(), 50, seed=3)
    b = _rounds(CT15SimulationEnv(), 50, seed=3)
    c = _rounds(CT15SimulationEnv(), 50, seed=4)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_comparator_is_best_fixed_order_by_enumeration() -> None:
    env = CT15SimulationEnv(n_items=4, noise=0.6)
    r = _rounds(env, 200, seed=5)
    got = env.comparator(["dcg", "sumloss"], [50, 200])
    orders = all_orders(4)
    for i, t in enumerate([50, 200]):
        totals_dcg = sum(dcg(row, orders) for row in r[:t])
        totals_sum = sum(sum_loss(row, orders) for row in r[:t])
        assert got["dcg"][i] == pytest.approx(totals_dcg.max())
        assert got["sumloss"][i] == pytest.approx(totals_sum.min())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_items": 1}, "n_items must be >= 2"),
        ({"relevant_fraction": 1.0}, "relevant_fraction must be < 1"),
        ({"noise": -0.1}, "noise must be >= 0"),
        ({"threshold": 0.0}, "threshold must be > 0"),
        ({"n_items": 3, "true_relevance": [0, 1]}, r"shape \(3,\)"),
        ({"n_items": 3, "true_relevance": [0, 2, 1]}, "item 1 is 2"),
    ],
)
def test_invalid_simulation_parameters(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CT15SimulationEnv(**kwargs)


# ---------------------------------------------------------------------------
# file-backed sequences

TABLE = np.array([[1, 0, 2], [0, 1, 0], [2, 2, 0], [0, 0, 1]])


def _write(tmp_path: Path, kind: str, table: np.ndarray = TABLE) -> Path:
    if kind == "csv":
        path = tmp_path / "rel.csv"
        path.write_text("i0,i1,i2\n" + "\n".join(",".join(map(str, r)) for r in table) + "\n")
    elif kind == "npy":
        path = tmp_path / "rel.npy"
        np.save(path, table)
    else:
        path = tmp_path / "rel.parquet"
        pq.write_table(pa.table({f"i{j}": table[:, j] for j in range(table.shape[1])}), path)
    return path


@pytest.mark.parametrize("kind", ["csv", "npy", "parquet"])
def test_file_round_trip_and_env(tmp_path: Path, kind: str) -> None:
    path = _write(tmp_path, kind)
    assert np.array_equal(read_relevance(path), TABLE)
    env = RelevanceFileEnv(path=str(path))
    assert env.horizon_limit == 4
    assert np.array_equal(_rounds(env, 4), TABLE)
    best = env.comparator(["precision@1"], [4])["precision@1"]
    assert best.tolist() == [2.0]  # items 0, 1 and 2 are relevant in 2 of 4 rounds each
    with pytest.raises(ValueError, match="holds 4 rounds; round 5"):
        env.observe(5)


def test_csv_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("1,0,1\n0,1\n")
    with pytest.raises(ValueError, match=r"bad\.csv: line 2: expected 3 values"):
        read_relevance(path)
    path.write_text("1,0,1\n0,x,1\n")
    with pytest.raises(ValueError, match=r"bad\.csv: line 2: not a number: 'x'"):
        read_relevance(path)
    path.write_text("a,b\n1,0\n-1,0\n")
    with pytest.raises(ValueError, match=r"line 3, column 1: relevance must be a finite grade"):
        read_relevance(path)
    path.write_text("1,nan\n")
    with pytest.raises(ValueError, match=r"line 1, column 2"):
        read_relevance(path)
    path.write_text("a,b\n")
    with pytest.raises(ValueError, match="no data rows"):
        read_relevance(path)


def test_npy_and_parquet_errors_name_row(tmp_path: Path) -> None:
    bad = TABLE.astype(float)
    bad[2, 1] = np.nan
    npy = tmp_path / "bad.npy"
    np.save(npy, bad)
    with pytest.raises(ValueError, match=r"bad\.npy: row 2, column 2"):
        read_relevance(npy)
    np.save(npy, np.arange(3))
    with pytest.raises(ValueError, match=r"expected a \(T, m\) table"):
        read_relevance(npy)
    pqt = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"a": pa.array([1, None, 0]), "b": [0, 1, 1]}), pqt)
    with pytest.raises(ValueError, match=r"bad\.parquet: row 1, column 'a': missing value"):
        read_relevance(pqt)
    pq.write_table(pa.table({"a": ["x", "y"]}), pqt)
    with pytest.raises(ValueError, match=r"column 'a': expected numbers"):
        read_relevance(pqt)


def test_file_path_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot tell the format"):
        RelevanceFileEnv(path=str(tmp_path / "rel.txt"))
    with pytest.raises(ValueError, match="no such file"):
        read_relevance(tmp_path / "missing.csv")
    (tmp_path / "junk.npy").write_text("not numpy")
    with pytest.raises(ValueError, match="not a readable .npy"):
        read_relevance(tmp_path / "junk.npy")
