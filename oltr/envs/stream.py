"""A stream of LETOR queries as an environment.

Round ``t`` draws a query from a :class:`~oltr.data.letor.QueryStream` (uniform
with replacement, or shuffled passes over the data set) and shows its
documents' feature matrix ``X_t`` of shape (m_t, d); the list length ``m_t``
changes from round to round. The documents' grades are the hidden relevance
(Chaudhuri & Tewari 2016 §2: "the learner receives a query and its document
list X_t, outputs a ranking, and the relevance vector R_t stays hidden except
for the top-k").

The data come from a LETOR/SVMlight file (``path``), a
:class:`~oltr.data.letor.LetorDataset` passed in (``dataset``), or, by default,
the synthetic generator :func:`oltr.data.synthetic.synthetic_letor` seeded by
``data_seed`` (a fixed data set, part of the environment's definition; the
query order is what the run's seed varies). Files are read at the first
:meth:`~oltr.envs.base.Environment.reset`, never in ``__init__``.

Contextual streams have no best fixed *order* — every round brings a new list —
so :meth:`~oltr.envs.base.Environment.comparator` is None for every measure;
regret against e.g. the best linear scorer needs an offline fit and belongs
with the learners that define it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from oltr.envs.base import Environment
from oltr.feedback import FeedbackModel
from oltr.registry import register_env
from oltr.types import Context
from oltr.validation import check_choice, check_scalar, not_a_file

__all__ = ["LetorStreamEnv"]


@register_env("letor-stream-v1")
class LetorStreamEnv(Environment):
    """Queries of a LETOR data set, one per round, features shown, grades hidden.

    Parameters
    ----------
    path
        LETOR/SVMlight file (plain or gzip); None for the synthetic data set.
    group_file
        List sizes for a file without ``qid:`` (see :func:`oltr.data.letor.load_letor`).
    normalize
        Min–max scale each feature within each query when reading ``path``: True,
        False, or ``"auto"`` (default: only a file with values outside [0, 1], such
        as raw MSLR-WEB; see :mod:`oltr.data.normalization`).
    drop_no_relevant
        Drop the queries of ``path`` whose documents all have grade 0.
    dataset
        A :class:`~oltr.data.letor.LetorDataset` to stream (instead of ``path``).
    order
        ``"uniform"`` (queries drawn with replacement) or ``"epochs"`` (shuffled
        passes over all queries).
    n_queries, n_features, max_grade, min_docs, max_docs
        Size of the synthetic data set (used when neither ``path`` nor
        ``dataset`` is given); ``n_features`` also widens a file's feature matrix.
    data_seed
        Seed of the synthetic data set, >= 0.
    feedback
        The feedback model.

    References
    ----------
    Chaudhuri & Tewari 2016, §2 (protocol) and §6 (sweeping a LETOR data set).
    Yue & Joachims 2009, §5.2 (queries sampled from a web-search data set).

    Examples
    --------
    >>> env = LetorStreamEnv(n_queries=20, n_features=4)
    >>> env.reset(rng=1)
    >>> ctx = env.observe(1)
    >>> ctx.features.shape == (ctx.n_items, 4)
    True
    """

    context_kind: ClassVar[str] = "features"

    def __init__(
        self,
        *,
        path: str | None = None,
        group_file: str | None = None,
        normalize: bool | Literal["auto"] = "auto",
        drop_no_relevant: bool = False,
        dataset: Any = None,
        order: str = "uniform",
        n_queries: int = 200,
        n_features: int | None = None,
        max_grade: int = 4,
        min_docs: int = 5,
        max_docs: int = 60,
        data_seed: int = 0,
        feedback: FeedbackModel | None = None,
    ) -> None:
        super().__init__(feedback=feedback)
        check_choice(order, "order", ("uniform", "epochs"))
        for name, value in (("path", path), ("group_file", group_file)):
            if value is not None:
                if not isinstance(value, str | Path):
                    raise TypeError(f"{name} must be a path string, got {type(value).__name__}")
                why = not_a_file(value)
                if why is not None:  # a folder or a FIFO is named as such, never opened
                    raise ValueError(f"{name}: {why}: {value}")
        if path is not None and dataset is not None:
            raise ValueError("give either path or dataset, not both")
        if dataset is not None:
            from oltr.data.dataset import LetorDataset

            if not isinstance(dataset, LetorDataset):
                raise TypeError(f"dataset must be a LetorDataset, got {type(dataset).__name__}")
        check_scalar(n_queries, "n_queries", low=1, integer=True)
        if n_features is not None:
            check_scalar(n_features, "n_features", low=1, integer=True)
        check_scalar(max_grade, "max_grade", low=1, integer=True)
        check_scalar(min_docs, "min_docs", low=1, integer=True)
        check_scalar(max_docs, "max_docs", low=min_docs, integer=True)
        check_scalar(data_seed, "data_seed", low=0, integer=True)
        self.path = path
        self.group_file = group_file
        self.normalize = normalize
        self.drop_no_relevant = drop_no_relevant
        self.dataset = dataset
        self.order = order
        self.n_queries = n_queries
        self.n_features = n_features
        self.max_grade = max_grade
        self.min_docs = min_docs
        self.max_docs = max_docs
        self.data_seed = data_seed
        self._data: Any = None

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"n_queries": 12, "n_features": 3, "max_grade": 2, "min_docs": 2, "max_docs": 7}
        yield {"n_queries": 5, "n_features": 2, "order": "epochs", "min_docs": 3, "max_docs": 3}

    def data(self) -> Any:
        """The streamed :class:`~oltr.data.letor.LetorDataset` (read or generated once)."""
        if self._data is None:
            if self.dataset is not None:
                self._data = self.dataset
            elif self.path is not None:
                from oltr.data.letor import load_letor

                self._data = load_letor(
                    self.path,
                    group_file=self.group_file,
                    n_features=self.n_features,
                    normalize=self.normalize,
                    drop_no_relevant=self.drop_no_relevant,
                )
            else:
                from oltr.data.synthetic import synthetic_letor

                self._data = synthetic_letor(
                    n_queries=self.n_queries,
                    n_features=self.n_features or 20,
                    max_grade=self.max_grade,
                    min_docs=self.min_docs,
                    max_docs=self.max_docs,
                    rng=self.data_seed,
                )
        return self._data

    def _reset(self, rng: np.random.Generator) -> None:
        from oltr.data.stream import QueryStream

        data = self.data()
        self._stream = QueryStream(data, order=self.order, rng=rng)  # type: ignore[arg-type]
        self._features, self._grades = data.features, data.relevance
        self._offsets, self._qids = data.offsets, data.qids

    def _next(self, t: int) -> tuple[Context, NDArray[Any]]:
        q = next(self._stream)
        lo, hi = int(self._offsets[q]), int(self._offsets[q + 1])
        # The data set's arrays are read-only, so these views cannot be written through.
        ctx = Context(t=t, n_items=hi - lo, features=self._features[lo:hi], qid=int(self._qids[q]))
        return ctx, self._grades[lo:hi]
