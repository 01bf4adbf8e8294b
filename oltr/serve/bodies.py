"""Request and response bodies of the HTTP API (pydantic); field names are the contract."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt

__all__ = [
    "ErrorBody",
    "FeedbackRequest",
    "FeedbackResponse",
    "RankRequest",
    "RankResponse",
    "RankerIn",
    "RankerInfo",
    "RankerList",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RankerIn(_Strict):
    """``PUT /rankers/{name}``: a learner and a feedback model, as in an experiment config."""

    learner: str = Field(description="registry name of the learner, e.g. 'rtopk'")
    params: dict[str, Any] = Field(default_factory=dict, description="learner parameters")
    feedback: str = Field("top-k", description="registry name of the feedback model")
    feedback_params: dict[str, Any] = Field(default_factory=dict)
    n_features: int | None = Field(None, ge=1, description="feature columns of a candidate")
    n_items: int | None = Field(None, ge=1, description="size of a fixed item set")
    seed: int = Field(0, ge=0, description="root seed of the learner's random stream")
    horizon: int | None = Field(None, ge=1, description="T, for schedules that need one")


class RankRequest(_Strict):
    """``POST /rankers/{name}/rank``: one row of features per candidate, or nothing."""

    features: list[list[float]] | None = None


class RankResponse(BaseModel):
    """The impression to send feedback for, the shown order and its logged propensities."""

    impression: str
    order: list[int]
    propensities: dict[str, Any]


class FeedbackRequest(_Strict):
    """``POST /rankers/{name}/feedback``: what the user revealed about one impression."""

    impression: str
    labels: list[float] | None = Field(None, description="grades of the top shown, in order")
    chosen: list[StrictInt] | None = Field(None, description="indices of the chosen items")
    clicks: list[StrictInt] | None = Field(None, description="clicked positions (duels)")


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
    """Every 4xx answer: what is wrong."""

    detail: str
