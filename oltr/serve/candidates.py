"""The HTTP routes of live comparisons: ``/rankers/{name}/candidate``, ``…/comparison``,
``…/rollout`` (:mod:`oltr.serve.rollout` does the work, :mod:`oltr.serve.comparison`
the statistics).

* ``PUT /rankers/{name}/candidate`` — attach a candidate (body
  :class:`CandidateIn`): 201 when new, 200 when the same configuration was
  there, 409 while another runs, 422 naming the field that cannot work;
* ``GET`` / ``DELETE /rankers/{name}/candidate`` — its configuration and phase;
  end it (the route serves its own ranker's list again);
* ``GET /rankers/{name}/comparison`` — the running numbers and intervals;
* ``GET /rankers/{name}/rollout`` — the rule, the phase and every decision;
  ``POST /rankers/{name}/rollout`` with ``{"action": "promote" | "rollback"}``
  decides by hand (recorded with ``"rule": "manual"``).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from oltr.serve.bodies import ErrorBody, ValidationErrorBody
from oltr.serve.comparison import CandidateConfig, RolloutRule
from oltr.serve.protocol import RequestError
from oltr.serve.rankers import Rankers
from oltr.serve.rollout import LiveComparison, attach, detach, history, manual

__all__ = ["CandidateIn", "RolloutAction", "RolloutIn", "candidate_router", "live_fields"]


class _StrictBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RolloutIn(_StrictBody):
    """When to promote the candidate and roll it back (see the serving guide)."""

    min_impressions: int = Field(
        2000, ge=1, le=10**9, description="compared impressions before a promotion"
    )
    margin: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        allow_inf_nan=False,
        description="promote when the advantage's lower bound exceeds it; roll back when "
        "the upper bound falls below minus it",
    )
    auto: bool = Field(True, description="act on the rule (false: only report it)")


class CandidateIn(_StrictBody):
    """``PUT /rankers/{name}/candidate``: another served ranker compared with this one."""

    ranker: str = Field(min_length=1, max_length=200, description="the candidate's name")
    mode: Literal["shadow", "interleaved"] = Field(
        "interleaved", description="shadow: logged, never shown; interleaved: a share of pages"
    )
    share: float = Field(
        0.2, gt=0.0, le=1.0, allow_inf_nan=False, description="share of interleaved requests"
    )
    method: Literal["team-draft"] = Field("team-draft", description="interleaving method")
    alpha: float = Field(
        0.05, gt=0.0, lt=1.0, allow_inf_nan=False, description="1 - coverage of the intervals"
    )
    rollout: RolloutIn | None = Field(None, description="the guarded rollout (interleaved only)")

    def config(self) -> CandidateConfig:
        """The configuration this body asks for."""
        raw = self.model_dump()
        rule = raw.pop("rollout")
        return CandidateConfig(**raw, rollout=None if rule is None else RolloutRule(**rule))


class RolloutAction(_StrictBody):
    """``POST /rankers/{name}/rollout``: a decision taken by hand."""

    action: Literal["promote", "rollback"]


_ERRORS: dict[int | str, dict[str, Any]] = {
    # 400: a body that is not JSON text (FastAPI's parse error)
    **{code: {"model": ErrorBody} for code in (400, 401, 404, 409)},
    422: {"model": ValidationErrorBody},
}


def live_fields(rankers: Rankers, name: str) -> dict[str, Any]:
    """``comparison`` and ``rollout`` of ranker ``name`` for its stats (None and [] if none)."""
    live = rankers.get(name).candidate
    return {
        "comparison": None if live is None else live.snapshot(),
        "rollout": history(rankers, name)["history"],
    }


def candidate_router(rankers: Rankers) -> APIRouter:
    """The routes of the module docstring over ``rankers``."""
    router = APIRouter()

    same: dict[int | str, dict[str, Any]] = {
        200: {"description": "the same configuration was there already"}
    }

    @router.put("/rankers/{name}/candidate", status_code=201, responses={**_ERRORS, **same})
    def put_candidate(name: str, body: CandidateIn, response: Response) -> dict[str, Any]:
        """Compare a candidate with ranker ``name`` (and roll it out, with ``rollout``)."""
        live, created = attach(rankers, name, body.config())
        response.status_code = 201 if created else 200
        return live.snapshot()

    @router.get("/rankers/{name}/candidate", responses=_ERRORS)
    def get_candidate(name: str) -> dict[str, Any]:
        """The candidate's configuration, the phase and who serves the route."""
        return _live(rankers, name).snapshot()

    @router.delete("/rankers/{name}/candidate", status_code=204, responses=_ERRORS)
    def delete_candidate(name: str) -> Response:
        """End the comparison: the route serves ranker ``name``'s own list again."""
        detach(rankers, name)
        return Response(status_code=204)

    @router.get("/rankers/{name}/comparison", responses=_ERRORS)
    def get_comparison(name: str) -> dict[str, Any]:
        """The running comparison: counts, estimates and intervals of the current phase."""
        return _live(rankers, name).snapshot()

    @router.get("/rankers/{name}/rollout", responses=_ERRORS)
    def get_rollout(name: str) -> dict[str, Any]:
        """The rule, the phase and every decision of ranker ``name``'s comparisons."""
        return history(rankers, name)

    @router.post("/rankers/{name}/rollout", responses=_ERRORS)
    def post_rollout(name: str, body: RolloutAction) -> dict[str, Any]:
        """Promote or roll back by hand."""
        return manual(rankers, name, body.action)

    return router


def _live(rankers: Rankers, name: str) -> LiveComparison:
    live: LiveComparison | None = rankers.get(name).candidate
    if live is None:
        raise RequestError(f"ranker {name!r} has no candidate", 404)
    return live
