"""Request and response bodies of the HTTP API (pydantic); field names are the contract.

Request bodies are strict: a number is a JSON number (an integer is accepted
where a real is meant), never a boolean or a numeric string; an integer field
takes only a JSON integer. Non-finite reals (the ``NaN`` and ``Infinity``
literals some encoders write, or a literal too large for a float64) pass the
parser and are refused by the checks of the route, which name the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ErrorBody",
    "FieldError",
    "FeedbackRequest",
    "FeedbackResponse",
    "RankRequest",
    "RankResponse",
    "RankerIn",
    "RankerInfo",
    "RankerList",
    "ValidationErrorBody",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RankerIn(_Strict):
    """``PUT /rankers/{name}``: a learner and a feedback model, as in an experiment config."""

    learner: str = Field(description="registry name of the learner, e.g. 'rtopk'")
    params: dict[str, Any] = Field(default_factory=dict, description="learner parameters")
    feedback: str = Field("top-k", description="registry name of the feedback model")
    feedback_params: dict[str, Any] = Field(default_factory=dict)
    n_features: int | None = Field(None, ge=1, description="feature columns of a candidate")
    n_items: int | None = Field(None, ge=1, description="size of a fixed item set")
    seed: int = Field(0, ge=0, description="root seed of the learner's random stream")
    # Schedules compute with T in float64, which holds every integer up to 2**53 exactly.
    horizon: int | None = Field(
        None, ge=1, le=2**53, description="T, for schedules that need one (at most 2**53)"
    )
    init: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="path, on the service's machine, of a linear model file (oltr logs fit) "
        "whose weights the learner starts from; read once, when the ranker is created",
    )
    normalize: bool | Literal["auto"] = Field(
        "auto",
        description="min-max scale each request's features per list (LETOR's QueryLevelNorm) "
        "before the learner sees or the store logs them: true, false, or 'auto' (when a value "
        "lies outside [0, 1])",
    )


class RankRequest(_Strict):
    """``POST /rankers/{name}/rank``: one row of features per candidate, or nothing."""

    features: list[list[float]] | None = None


class RankResponse(BaseModel):
    """The impression to send feedback for, the shown order and its logged propensities."""

    impression: str
    order: list[int]
    propensities: dict[str, Any] = Field(
        description='{"method", "list": P(page), "prefix": [P(first j shown)]}; {} if none'
    )


class FeedbackRequest(_Strict):
    """``POST /rankers/{name}/feedback``: what the user revealed about one impression."""

    impression: str
    labels: list[float] | None = Field(None, description="grades of the top shown, in order")
    chosen: list[int] | None = Field(None, description="indices of the chosen items")
    clicks: list[int] | None = Field(
        None, description="clicked positions, 0-based: of the page (clicks) or shown list (duels)"
    )


class FeedbackResponse(BaseModel):
    """The number of rounds learned so far; for duels, the interleaving's outcome."""

    round: int
    outcome: int | None = Field(None, description="-1: current ranker won, +1: candidate won")


class RankerInfo(BaseModel):
    """``GET /rankers/{name}``."""

    name: str
    definition: dict[str, Any]
    rounds: int
    impressions: int
    pending: int
    expired: int
    learner: dict[str, Any]


class RankerList(BaseModel):
    """``GET /rankers``."""

    rankers: list[RankerInfo]


class ErrorBody(BaseModel):
    """A 4xx answer (but 422): what is wrong, in words."""

    detail: str


class FieldError(BaseModel):
    """One located error of a body that does not parse or has the wrong shape or types."""

    type: str = Field(description="kind of error, e.g. 'json_invalid', 'float_type', 'missing'")
    loc: list[str | int] = Field(description="where: 'body', then field names and list indices")
    msg: str
    input: Any = None
    ctx: dict[str, Any] | None = None


class ValidationErrorBody(BaseModel):
    """A 422 answer: a list of located errors when the body does not parse or has the wrong
    shape or types; a sentence when its values do not fit the ranker."""

    detail: str | list[FieldError]
