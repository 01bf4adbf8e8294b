"""Ranking models fit from click logs: the scorers, and the model file that carries them.

A :class:`RankingModel` is a scoring function ``s = f(x)`` of a document's
features (a list is ranked by descending score) plus where it came from. Two
scorers:

``"linear"``
    ``f(x) = w · x``, ``w ∈ R^d``.
``"mlp"``
    one or more hidden ``tanh`` layers and a linear output:
    ``h_0 = x``, ``h_l = tanh(h_{l-1} W_l + b_l)``, ``f(x) = h_{L-1} W_L + b_L``
    (``W_l`` of shape (fan-in, fan-out); the last layer has one output).

Model file (JSON, UTF-8, written atomically by :func:`save_model`)::

    {
      "format": "oltr-model",          # always this string
      "version": 1,                     # this layout; other versions are refused
      "kind": "linear" | "mlp",
      "n_features": d,                  # length of the feature vectors it scores
      "weights": [w_1, ..., w_d],       # kind "linear" only
      "layers": [                       # kind "mlp" only, input to output
        {"weights": [[...], ...],       #   (fan-in, fan-out) row-major
         "bias": [...]},                #   (fan-out,)
        ...                             #   the last layer has fan-out 1
      ],
      "activation": "tanh",             # kind "mlp" only
      "learner": "naive" | "ips" | "ips-pairwise" | "dla" | "dr" | "skyline" | ...,
      "propensities": [θ_1, ..., θ_K] | null,   # those the learner used (θ_1 = 1)
      "data": {...}                     # provenance: log, data set, sessions, options
    }

Every number must be finite; :func:`load_model` names the key of the first
problem (:class:`ModelFormatError`, a :class:`~oltr.errors.DataFormatError`).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.data.dataset import LetorDataset
from oltr.errors import DataFormatError, InputError, StorageError
from oltr.metrics.ranking import ndcg

__all__ = [
    "MODEL_FORMAT",
    "MODEL_VERSION",
    "SCORERS",
    "ModelFormatError",
    "RankingModel",
    "Scorer",
    "check_propensities",
    "load_model",
    "make_scorer",
    "mean_ndcg",
    "save_model",
]

MODEL_FORMAT = "oltr-model"
MODEL_VERSION = 1
#: The scorer kinds.
SCORERS = ("linear", "mlp")

FloatArray = NDArray[np.float64]
Backward = Callable[[FloatArray], FloatArray]


class ModelFormatError(DataFormatError):
    """A model file that cannot be used, naming the file and the key at fault."""


@dataclass(frozen=True)
class Scorer:
    """A scoring function with a flat parameter vector (what the optimisers see).

    ``hidden`` is the widths of the hidden ``tanh`` layers; ``()`` is the
    linear scorer.
    """

    n_features: int
    hidden: tuple[int, ...] = ()

    @property
    def kind(self) -> str:
        """``"linear"`` or ``"mlp"``."""
        return "mlp" if self.hidden else "linear"

    @property
    def shapes(self) -> list[tuple[tuple[int, int], int]]:
        """(weight shape, bias length) of every layer; the linear scorer has no bias."""
        widths = [self.n_features, *self.hidden, 1]
        return [((widths[i], widths[i + 1]), widths[i + 1]) for i in range(len(widths) - 1)]

    @property
    def n_params(self) -> int:
        """Length of the flat parameter vector."""
        if not self.hidden:
            return self.n_features
        return sum(a * b + n for (a, b), n in self.shapes)

    def unpack(self, params: FloatArray) -> list[tuple[FloatArray, FloatArray]]:
        """The (W, b) of every layer, as views of ``params``."""
        if not self.hidden:
            return [(params.reshape(self.n_features, 1), np.zeros(1))]
        out, at = [], 0
        for (a, b), n in self.shapes:
            w = params[at : at + a * b].reshape(a, b)
            at += a * b
            out.append((w, params[at : at + n]))
            at += n
        return out

    def init(self, rng: np.random.Generator) -> FloatArray:
        """Initial parameters: zeros (linear); Glorot-uniform weights, zero biases (mlp)."""
        if not self.hidden:
            return np.zeros(self.n_features)
        parts = []
        for (a, b), n in self.shapes:
            limit = math.sqrt(6.0 / (a + b))
            parts.append(rng.uniform(-limit, limit, size=a * b))
            parts.append(np.zeros(n))
        return np.concatenate(parts)

    def scores(self, params: FloatArray, features: FloatArray) -> FloatArray:
        """Scores of the rows of ``features`` (n, d) -> (n,)."""
        return self.forward(params, features)[0]

    def forward(self, params: FloatArray, features: FloatArray) -> tuple[FloatArray, Backward]:
        """Scores and the map ``ds -> d(ds · s)/d params`` (reverse mode)."""
        if not self.hidden:
            return features @ params, lambda ds: features.T @ ds
        layers = self.unpack(params)
        acts = [features]
        h = features
        for w, b in layers[:-1]:
            h = np.tanh(h @ w + b)
            acts.append(h)
        w_out, b_out = layers[-1]
        s = (h @ w_out)[:, 0] + b_out[0]

        def backward(ds: FloatArray) -> FloatArray:
            grads: list[FloatArray] = []
            delta = ds[:, None]
            for i in range(len(layers) - 1, -1, -1):
                w, _ = layers[i]
                grads.append(delta.sum(axis=0))
                grads.append((acts[i].T @ delta).ravel())
                if i:
                    delta = (delta @ w.T) * (1.0 - acts[i] ** 2)
            return np.concatenate(grads[::-1])

        return s, backward


def make_scorer(kind: str, n_features: int, *, hidden: int = 32) -> Scorer:
    """The scorer named ``kind`` (``"linear"`` or ``"mlp"`` with ``hidden`` tanh units)."""
    if kind == "linear":
        return Scorer(n_features)
    if kind == "mlp":
        if hidden < 1:
            raise InputError(f"hidden must be >= 1, got {hidden}")
        return Scorer(n_features, (int(hidden),))
    raise InputError(f"unknown scorer {kind!r}; choose one of {', '.join(SCORERS)}")


@dataclass(frozen=True, eq=False)
class RankingModel:
    """A fitted scoring function and its provenance.

    Attributes
    ----------
    scorer, params
        The scoring function and its flat parameter vector.
    learner
        Which learner fit it (``"ips"``, ``"dla"``, ...).
    propensities
        The examination propensities θ it was fit with (θ_1 = 1), or None.
    data
        Provenance (JSON-serialisable): log, data set, number of sessions, options.
    """

    scorer: Scorer
    params: FloatArray
    learner: str
    propensities: FloatArray | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """The scorer kind."""
        return self.scorer.kind

    @property
    def n_features(self) -> int:
        """Length of the feature vectors it scores."""
        return self.scorer.n_features

    def scores(self, features: ArrayLike) -> FloatArray:
        """Scores of the rows of ``features`` (n, d) (or one vector (d,) -> a scalar array)."""
        x = np.asarray(features, dtype=np.float64)
        if x.ndim not in (1, 2) or x.shape[-1] != self.n_features:
            raise InputError(f"features must have shape (n, {self.n_features}), got {x.shape}")
        if x.ndim == 1:
            return self.scorer.scores(self.params, x[None, :])[0]  # type: ignore[no-any-return]
        return self.scorer.scores(self.params, x)

    def to_json(self) -> dict[str, Any]:
        """The model file's content (see the module docstring)."""
        out: dict[str, Any] = {
            "format": MODEL_FORMAT,
            "version": MODEL_VERSION,
            "kind": self.kind,
            "n_features": self.n_features,
        }
        if self.kind == "linear":
            out["weights"] = self.params.tolist()
        else:
            out["layers"] = [
                {"weights": w.tolist(), "bias": b.tolist()}
                for w, b in self.scorer.unpack(self.params)
            ]
            out["activation"] = "tanh"
        out["learner"] = self.learner
        out["propensities"] = None if self.propensities is None else self.propensities.tolist()
        out["data"] = dict(self.data)
        return out

    @classmethod
    def from_json(cls, content: Any, *, source: str = "model") -> RankingModel:
        """Check and build a model from parsed JSON (errors name ``source`` and the key)."""
        return _parse(content, source)


def _bad(source: str, key: str, problem: str) -> ModelFormatError:
    return ModelFormatError(f"{source}: {key!r} {problem}")


def _finite_array(value: Any, shape: tuple[int, ...], source: str, key: str) -> FloatArray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _bad(source, key, "must be an array of numbers") from None
    if array.shape != shape:
        raise _bad(source, key, f"must have shape {shape}, got {array.shape}")
    if not np.isfinite(array).all():
        raise _bad(source, key, "holds a value that is not finite (NaN or infinity)")
    return array


def _parse(content: Any, source: str) -> RankingModel:
    if not isinstance(content, dict):
        raise ModelFormatError(f"{source}: a model file holds a JSON object")
    if content.get("format") != MODEL_FORMAT:
        raise _bad(source, "format", f"must be {MODEL_FORMAT!r}, got {content.get('format')!r}")
    if content.get("version") != MODEL_VERSION:
        raise _bad(
            source, "version", f"{content.get('version')!r} is not supported (only {MODEL_VERSION})"
        )
    kind = content.get("kind")
    if kind not in SCORERS:
        raise _bad(source, "kind", f"must be one of {SCORERS}, got {kind!r}")
    d = content.get("n_features")
    if not isinstance(d, int) or isinstance(d, bool) or d < 1:
        raise _bad(source, "n_features", f"must be a positive integer, got {d!r}")
    if kind == "linear":
        params = _finite_array(content.get("weights"), (d,), source, "weights")
        scorer = Scorer(d)
    else:
        layers = content.get("layers")
        if not isinstance(layers, list) or len(layers) < 2:
            raise _bad(source, "layers", "must be a list of at least two layers")
        if content.get("activation", "tanh") != "tanh":
            raise _bad(source, "activation", f"must be 'tanh', got {content.get('activation')!r}")
        hidden = []
        for i, layer in enumerate(layers[:-1]):
            w = layer.get("bias") if isinstance(layer, dict) else None
            if not isinstance(w, list):
                raise _bad(source, f"layers[{i}].bias", "must be a list of numbers")
            hidden.append(len(w))
        scorer = Scorer(d, tuple(hidden))
        parts = []
        for i, (layer, ((a, b), n)) in enumerate(zip(layers, scorer.shapes, strict=True)):
            if not isinstance(layer, dict):
                raise _bad(source, f"layers[{i}]", "must be an object with weights and bias")
            key = f"layers[{i}]"
            parts.append(_finite_array(layer.get("weights"), (a, b), source, f"{key}.weights"))
            parts.append(_finite_array(layer.get("bias"), (n,), source, f"layers[{i}].bias"))
        params = np.concatenate([p.ravel() for p in parts])
    theta = content.get("propensities")
    propensities = None
    if theta is not None:
        if not isinstance(theta, list) or not theta:
            raise _bad(source, "propensities", "must be a non-empty list of numbers or null")
        propensities = _finite_array(theta, (len(theta),), source, "propensities")
        if (propensities <= 0).any():
            raise _bad(source, "propensities", "must be positive")
    learner = content.get("learner")
    if not isinstance(learner, str):
        raise _bad(source, "learner", f"must be a string, got {learner!r}")
    data = content.get("data", {})
    if not isinstance(data, dict):
        raise _bad(source, "data", "must be an object")
    return RankingModel(scorer, params, learner, propensities, data)


def save_model(model: RankingModel, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` to ``path`` as JSON, atomically (a temporary file, then a rename)."""
    target = Path(path)
    text = json.dumps(model.to_json(), indent=1, allow_nan=False)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise StorageError(f"cannot write the model file {target}: {exc}") from exc
    return target


def load_model(path: str | os.PathLike[str]) -> RankingModel:
    """Read a model file written by :func:`save_model` (errors name the file and the key)."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"model file {source} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFormatError(f"{source}: cannot read the model file: {exc}") from exc
    try:
        content = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelFormatError(
            f"{source}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    return _parse(content, source)


def check_propensities(
    theta: Sequence[float] | FloatArray, what: str = "propensities"
) -> FloatArray:
    """``theta`` as a positive, finite float vector (θ_1 need not be 1)."""
    array = np.asarray(theta, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise InputError(f"{what} must be a non-empty vector, got shape {array.shape}")
    if not np.isfinite(array).all() or (array <= 0).any():
        raise InputError(f"{what} must be positive and finite, got {array.tolist()}")
    return array


def mean_ndcg(
    model: RankingModel | Callable[[FloatArray], FloatArray],
    dataset: LetorDataset,
    *,
    k: int = 10,
    no_relevant: float = 1.0,
) -> float:
    """Mean over the queries of ``dataset`` of NDCG@k of the ranking by ``model``'s scores.

    Ties are broken by the lower document index; a query without a relevant
    document counts ``no_relevant`` (:func:`oltr.metrics.ndcg`'s convention).
    ``model`` is a :class:`RankingModel` or any function of the feature matrix.
    """
    scorer = model.scores if isinstance(model, RankingModel) else model
    scores = np.asarray(scorer(np.asarray(dataset.features, dtype=np.float64)), dtype=np.float64)
    lengths = np.diff(dataset.offsets)
    width = int(lengths.max())
    mask = np.arange(width)[None, :] < lengths[:, None]
    padded = np.full(mask.shape, -np.inf)
    padded[mask] = scores
    grades = np.zeros(mask.shape)
    grades[mask] = dataset.relevance
    order = np.argsort(-padded, axis=1, kind="stable")
    values = ndcg(grades, order, k=k, mask=mask, no_relevant=no_relevant)
    return float(np.mean(values))
