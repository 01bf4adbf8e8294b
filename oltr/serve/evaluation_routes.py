"""``POST /rankers/{name}/evaluate``: judge a candidate off-policy on ranker ``name``'s log.

The body (:class:`EvaluateIn`) names the candidate — another served ranker,
a ranker definition as ``PUT /rankers/{name}`` takes it, or the path of a model
file of ``oltr logs fit`` on the service's machine — the estimators, the
metric, the interval and ``alpha``. The answer (:class:`EvaluateOut`) holds
each estimate with its ``1 − alpha`` interval and the logged ranker's own
on-policy value; :mod:`oltr.serve.evaluation` does the work. The route is a
plain function, so FastAPI runs it on its thread pool: reading the log, the
marginals and the bootstrap never stall the event loop. 404: no ranker
``name`` (or no candidate ranker of that name); 422: a body that cannot work
(a ranker without propensities, a model of the wrong ``n_features``, an
unreadable model file, no estimator that can judge this log).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from oltr.errors import OltrError
from oltr.learners.counterfactual import load_model
from oltr.serve.bodies import ErrorBody, RankerIn, ValidationErrorBody
from oltr.serve.evalcandidates import definition_candidate
from oltr.serve.evaluation import (
    Candidate,
    LoggedImpressions,
    check_features,
    evaluate,
    learner_weights,
    logged_impressions,
    model_candidate,
    weights_candidate,
)
from oltr.serve.protocol import RequestError
from oltr.serve.rankers import Rankers
from oltr.serve.warmstart import MAX_MODEL_BYTES

__all__ = ["EvaluateIn", "EvaluateOut", "evaluation_router"]

EstimatorName = Literal["ips", "snips", "pbm-ips", "cascade-dr"]


def _all_estimators() -> list[EstimatorName]:
    return ["ips", "snips", "pbm-ips", "cascade-dr"]


class _StrictBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RankerRef(_StrictBody):
    """Another served ranker, judged by its current weights, greedily."""

    ranker: str = Field(min_length=1, max_length=200)


class DefinitionRef(_StrictBody):
    """A ranker definition, judged as the list its fresh learner plays greedily."""

    definition: RankerIn


class ModelRef(_StrictBody):
    """A model file of ``oltr logs fit`` on the service's machine."""

    model: str = Field(min_length=1, max_length=4096)


class EvaluateIn(_StrictBody):
    """``POST /rankers/{name}/evaluate``."""

    candidate: RankerRef | DefinitionRef | ModelRef
    estimators: list[EstimatorName] = Field(
        default_factory=_all_estimators, min_length=1, max_length=4
    )
    metric: str = Field(
        "clicks",
        pattern=r"^(clicks|ctr|dcg)(@[1-9][0-9]{0,5})?$",
        description="clicks, ctr@k or dcg@k (the whole page without @k)",
    )
    interval: Literal["studentized", "bca", "bernstein"] | None = Field(
        None, description="null: each estimator's default (studentized bootstrap)"
    )
    alpha: float = Field(
        0.05, gt=0.0, lt=1.0, allow_inf_nan=False, description="1 - coverage of the intervals"
    )


class EstimateOut(BaseModel):
    """One estimate of the candidate's (or the logger's) expected metric per impression."""

    estimator: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    interval: str
    stderr: float | None
    n: int
    matched: int


class EvaluateOut(BaseModel):
    """The estimates, the logged ranker's own value, and what was left out and why."""

    ranker: str
    candidate: str
    metric: str
    alpha: float
    impressions: int
    skipped: dict[str, int]
    on_policy: EstimateOut
    estimates: list[EstimateOut]
    unavailable: dict[str, str]


_ERRORS: dict[int | str, dict[str, Any]] = {
    **{code: {"model": ErrorBody} for code in (400, 401, 404)},  # 400: a body that is not JSON
    422: {"model": ValidationErrorBody},
}


def _candidate(rankers: Rankers, ref: Any, logged: LoggedImpressions) -> Candidate:
    if isinstance(ref, RankerRef):
        other = rankers.get(ref.ranker)
        what = f"ranker {ref.ranker!r}"
        check_features(what, other.definition.n_features, logged)
        with other.lock:
            w = learner_weights(other.learner, what, logged.n_features)
        return weights_candidate(what, w, logged)
    if isinstance(ref, DefinitionRef):
        return definition_candidate(ref.definition.model_dump(), logged, "in the body")
    path = Path(ref.model)
    try:
        too_big = path.is_file() and path.stat().st_size > MAX_MODEL_BYTES
    except OSError as exc:
        raise RequestError(f"model {ref.model}: {exc}") from None
    if too_big:
        raise RequestError(f"model {ref.model} is larger than {MAX_MODEL_BYTES} bytes")
    return model_candidate(f"model {ref.model}", load_model(path), logged)


def evaluation_router(rankers: Rankers) -> APIRouter:
    """The route of the module docstring over ``rankers``."""
    router = APIRouter()

    @router.post("/rankers/{name}/evaluate", responses=_ERRORS)
    def evaluate_candidate(name: str, body: EvaluateIn) -> EvaluateOut:
        """Estimate a candidate's value off-policy from ranker ``name``'s logged impressions."""
        ranker = rankers.get(name)
        try:
            logged = logged_impressions(ranker.store, name, learner=ranker.definition.learner)
            cand = _candidate(rankers, body.candidate, logged)
            result = evaluate(
                logged, cand, estimators=body.estimators, metric=body.metric,
                interval=body.interval, alpha=body.alpha,
            )  # fmt: skip
        except RequestError:
            raise
        except (OltrError, ValidationError, ValueError, OSError) as exc:  # a path with a NUL, …
            raise RequestError(str(exc)) from None
        if not result.estimates:
            raise RequestError(f"no estimator can judge this log: {result.unavailable}")
        return EvaluateOut(**result.to_dict())

    return router
