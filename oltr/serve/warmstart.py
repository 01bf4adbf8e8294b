"""A served ranker started from a model file: ``"init": "<path>"`` in ``PUT /rankers/{name}``.

The model file is the JSON that ``oltr logs fit`` writes
(:func:`oltr.learners.counterfactual.save_model`; checked as
:func:`~oltr.learners.counterfactual.load_model` checks it)::

    {"format": "oltr-model", "version": 1, "kind": "linear",
     "n_features": d, "weights": [w_1, ..., w_d], ...}

The service reads it once, when the ranker is created, and keeps the weights
themselves in the ranker's definition, with the path and the SHA-256 of the
bytes read (:func:`read_init`): a restart, a kill -9 and a replay rebuild the
same learner from the store alone, bit for bit, whether or not the file is
still there (JSON floats round-trip exactly). The learner starts from the
weights through its ``warm_start`` hook (:mod:`oltr.learners.warm`,
:func:`oltr.serve.protocol.apply_init`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from oltr.learners.counterfactual import RankingModel
from oltr.serve.protocol import RequestError

__all__ = ["MAX_MODEL_BYTES", "read_init"]

#: The largest model file the service reads (a linear model of a million features is ~25 MB).
MAX_MODEL_BYTES = 64 << 20


def read_init(path: str, n_features: int | None) -> dict[str, Any]:
    """What a ranker's definition keeps of the model file at ``path``.

    Returns ``{"path", "sha256", "kind", "n_features", "learner", "weights"}``:
    the resolved path and the hash of the bytes read record where the weights
    came from; the weights are what the learner starts from.

    Raises :class:`RequestError` (422) naming the problem: no such file, a file
    that cannot be read or is not an oltr model, a model that is not linear, or
    a feature count other than the ranker's ``n_features``.
    """
    if n_features is None:
        raise RequestError("init starts a feature-list ranker: give n_features")
    where = repr(path)
    file = Path(path)
    try:
        file = file.resolve()
        size = file.stat().st_size
        if not file.is_file():
            raise RequestError(f"init {where}: not a regular file")
        if size > MAX_MODEL_BYTES:
            raise RequestError(f"init {where}: {size} bytes, above the {MAX_MODEL_BYTES} read")
        data = file.read_bytes()
    except RequestError:
        raise
    except FileNotFoundError as exc:
        raise RequestError(f"init {where}: no such file (the service reads it)") from exc
    except OSError as exc:
        raise RequestError(f"init {where}: cannot be read: {exc.strerror or exc}") from exc
    except ValueError as exc:  # e.g. an embedded NUL: no file can have that name
        raise RequestError(f"init {where}: not a file path ({exc})") from exc
    try:
        model = RankingModel.from_json(json.loads(data), source=f"init {path!r}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RequestError(f"init {where}: not an oltr model file (not JSON: {exc})") from exc
    except ValueError as exc:  # ModelFormatError, InputError: the key and the problem
        raise RequestError(f"{exc} (not a usable oltr model file)") from exc
    if model.kind != "linear":
        raise RequestError(
            f"init {where}: a model of kind {model.kind!r} cannot start a served ranker; "
            "only a linear model (kind 'linear') gives the weights of a linear learner"
        )
    if model.n_features != n_features:
        raise RequestError(
            f"init {where}: the model has n_features {model.n_features}, "
            f"the ranker n_features {n_features}"
        )
    weights = [float(w) for w in model.params.tolist()]
    return {
        "path": str(file),
        "sha256": hashlib.sha256(data).hexdigest(),
        "kind": model.kind,
        "n_features": model.n_features,
        "learner": model.learner,
        "weights": weights,
    }
