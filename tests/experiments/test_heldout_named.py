"""Named held-out sets (RunSetSpec.heldouts): columns, agreement with heldout, random ranker."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oltr.data.dataset import LetorDataset
from oltr.data.letor import load_letor, write_letor
from oltr.data.synthetic import synthetic_letor
from oltr.experiments.heldout import HeldoutSet, check_heldouts
from oltr.experiments.runner import RunSetSpec, run_set, trace_columns
from oltr.metrics import ndcg
from oltr.random import child_rng
from oltr.types import RunGenerators

SEED = 5
REPS = (0, 1, 2)
CHECKPOINTS = (1, 10, 40)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLTR_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A training stream and two held-out files of its width."""
    paths = tmp_path / "train.txt", tmp_path / "test.txt", tmp_path / "vali.txt.gz"
    for i, path in enumerate(paths):
        data = synthetic_letor(n_queries=20, n_features=6, min_docs=2, max_docs=20, rng=10 + i)
        write_letor(data, path)
    return paths


def _spec(train: Path, learner: str, feedback: str = "full", **kw: object) -> RunSetSpec:
    return RunSetSpec(
        env="letor-stream-v1",
        env_params={"path": str(train)},
        feedback=feedback,
        feedback_params={"click_model": "perfect"} if feedback == "clicks" else {},
        learner=learner,
        learner_params={},
        reps=REPS,
        seed=SEED,
        horizon=CHECKPOINTS[-1],
        measures=("ndcg@10",),
        checkpoints=CHECKPOINTS,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("learner", "feedback"),
    [("listnet", "full"), ("rtopk", "full"), ("pdgd-neural", "clicks")],
)
def test_named_columns_equal_the_single_heldout_column(files, learner, feedback) -> None:
    # Weights (listnet, the averaged iterate of rtopk) and a network (pdgd-neural): a named
    # table holding the same file gives the single column bit for bit, another file its own
    # values, and the rest of the trace is the one without held-out evaluation.
    train, test, vali = files
    plain = run_set(_spec(train, learner, feedback))
    both = run_set(
        _spec(
            train,
            learner,
            feedback,
            heldout={"path": str(test)},
            heldouts={"test": {"path": str(test)}, "vali": {"path": str(vali), "k": 5}},
        )
    )
    assert list(both.columns) == trace_columns(
        ("ndcg@10",), heldout_k=10, heldouts={"test": 10, "vali": 5}
    )
    np.testing.assert_array_equal(both["heldout:test:ndcg@10"], both["heldout:ndcg@10"])
    assert not np.allclose(both["heldout:vali:ndcg@5"], both["heldout:test:ndcg@10"])
    pd.testing.assert_frame_equal(both[list(plain.columns)], plain, check_exact=True)


def _random_by_hand(data: LetorDataset, name: str, n_cp: int) -> np.ndarray:
    """(B, n_checkpoints): one uniform key per document per checkpoint, ranked; NDCG@10 by loop."""
    out = np.empty((len(REPS), n_cp))
    for b, rep in enumerate(REPS):
        rng = child_rng(SEED, "heldout", name, rep)
        for c in range(n_cp):
            keys = rng.random(data.features.shape[0])
            values = []
            for q in range(data.n_queries):
                lo, hi = data.offsets[q], data.offsets[q + 1]
                order = np.argsort(-keys[lo:hi], kind="stable")
                values.append(float(ndcg(data.relevance[lo:hi], order, k=10)))
            out[b, c] = np.mean(values)
    return out


def test_random_ranker_is_scored_by_random_permutations(files) -> None:
    train, test, _ = files
    df = run_set(
        _spec(train, "random", heldout={"path": str(test)}, heldouts={"t": {"path": str(test)}})
    )
    assert df["heldout:ndcg@10"].isna().all()  # the single table keeps its meaning: no model
    got = df.pivot(index="rep", columns="t", values="heldout:t:ndcg@10").to_numpy()
    want = _random_by_hand(load_letor(test, cache=False), "t", len(CHECKPOINTS))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert len(np.unique(got)) == got.size  # a fresh permutation per run and checkpoint


def test_random_permutations_have_the_expected_ndcg() -> None:
    # 2,000 lists of m = 5 with one relevant document: a uniform order puts it at position i
    # with probability 1/5, so E NDCG@10 = (1/5) Σ_{i=1..5} 1/log2(i + 1) = 0.5897. The mean
    # over lists has a standard error below 0.006 (per-list sd < 0.26); 5 SE is the tolerance.
    m, n = 5, 2000
    relevance = np.zeros(m * n, dtype=np.int64)
    relevance[np.arange(n) * m + np.random.default_rng(0).integers(m, size=n)] = 1
    data = LetorDataset(
        features=np.zeros((m * n, 1)),
        relevance=relevance,
        qids=np.arange(n),
        offsets=np.arange(0, m * n + 1, m),
    )
    value = HeldoutSet(data).evaluate_random(RunGenerators.from_keys(3, "x", reps=(0, 1)))
    expected = np.mean(1.0 / np.log2(np.arange(2, m + 2)))
    np.testing.assert_allclose(value, expected, atol=5 * 0.26 / np.sqrt(n))


def test_a_run_does_not_depend_on_its_batch(files) -> None:
    train, test, _ = files
    kw = {"heldouts": {"t": {"path": str(test)}}}
    batch = run_set(_spec(train, "random", **kw))
    single = run_set(RunSetSpec(**{**_spec(train, "random", **kw).__dict__, "reps": (1,)}))
    pd.testing.assert_frame_equal(
        batch[batch["rep"] == 1].reset_index(drop=True), single, check_exact=True
    )


def test_width_and_names_are_checked(files, tmp_path: Path) -> None:
    train, test, _ = files
    narrow = tmp_path / "narrow.txt"
    write_letor(synthetic_letor(n_queries=4, n_features=5, rng=3), narrow)
    with pytest.raises(ValueError, match=r"heldouts\.n\.path: .* has 5 features but the stream"):
        run_set(_spec(train, "listnet", heldouts={"n": {"path": str(narrow)}}))
    with pytest.raises(ValueError, match=r"heldouts\.x\.path: no such file"):
        run_set(_spec(train, "listnet", heldouts={"x": {"path": str(tmp_path / "none.txt")}}))
    with pytest.raises(ValueError, match="without ':'"):
        check_heldouts({"a:b": {"path": "t.txt"}})
    with pytest.raises(ValueError, match=r"heldouts\.a: unknown key 'kk'"):
        check_heldouts({"a": {"path": "t.txt", "kk": 1}})
    with pytest.raises(TypeError, match="non-empty dict"):
        check_heldouts({})
