"""The HTTP routes of ``oltr serve`` (FastAPI) over :class:`~oltr.serve.rankers.Rankers`.

The two routes on the hot path, ``rank`` and ``feedback``, are answered by an
ASGI layer before FastAPI (:mod:`oltr.serve.hotpath`: a compiled JSON decoder,
or a ``.npy`` body, straight into arrays); their FastAPI routes here describe
them in the OpenAPI schema and refuse, with FastAPI's 422, the bodies that
layer hands over. The other routes are plain functions that FastAPI runs on
its thread pool. A thin ASGI layer in front of everything checks the bearer
token, refuses bodies over the size limit (413) and records the metrics of
every answer.
"""

from __future__ import annotations

import contextlib
import gc
import hmac
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect
from starlette.routing import Match, Route

from oltr.errors import InputError
from oltr.serve.bodies import (
    ErrorBody,
    FeedbackRequest,
    FeedbackResponse,
    RankerIn,
    RankerInfo,
    RankerList,
    RankRequest,
    RankResponse,
    ValidationErrorBody,
)
from oltr.serve.candidates import candidate_router
from oltr.serve.evaluation_routes import evaluation_router
from oltr.serve.hotpath import NPY_MEDIA_TYPE, HotPath, HotRoutes
from oltr.serve.limits import Limits
from oltr.serve.metrics import CONTENT_TYPE_LATEST, ServeMetrics
from oltr.serve.protocol import RankerDefinition, RequestError
from oltr.serve.rankers import Rankers
from oltr.serve.rollout import restore_comparisons
from oltr.serve.store import Store
from oltr.serve.storecheck import StoreDamagedError
from oltr.serve.ui import UI_OPEN_PATHS, ui_router
from oltr.serve.warmstart import read_init

__all__ = ["ServeSettings", "create_app", "freeze_long_lived"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_OPEN_PATHS = frozenset({"/healthz", *UI_OPEN_PATHS})  # the page holds no data: its JSON does
_Body = TypeVar("_Body", bound=BaseModel)


@dataclass(frozen=True)
class ServeSettings:
    """How a service runs.

    Parameters
    ----------
    store
        SQLite file of the state (created when missing).
    token
        Bearer token every request but ``/healthz`` must carry; None: no auth.
    impression_ttl
        Seconds after which an impression without feedback expires.
    snapshot_every
        Feedback rounds between learner snapshots.
    max_body
        Largest request body in bytes (413 beyond).
    synchronous
        SQLite ``synchronous`` level, ``"FULL"`` or ``"NORMAL"`` (see :class:`Store`).
    limits
        Rows × features per request, ``n_items`` and ``n_features`` per definition,
        bytes of pending impressions in memory (:class:`~oltr.serve.limits.Limits`).
    """

    store: str | Path = "oltr-serve.db"
    token: str | None = None
    impression_ttl: float = 3600.0
    snapshot_every: int = 100
    max_body: int = 1 << 20
    synchronous: str = "FULL"
    limits: Limits = Limits()


def _refreeze(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()


def freeze_long_lived() -> None:
    """Keep the garbage collector's full collections short in a long-running service.

    A full collection walks every object the collector tracks: in a service
    that has imported numpy, scipy, numba, pandas and FastAPI and compiled its
    kernels, that is tens of milliseconds (60 to 150 ms measured), during which
    no request is served. The objects alive now, and the survivors of each full
    collection from now on, are moved out of its reach (``gc.freeze``), so the
    next full collections only walk what is new. The price: a frozen object
    that later becomes cyclic garbage (a deleted ranker's learner, say) is
    never freed. For ``oltr serve``, which owns its process; idempotent.
    """
    gc.freeze()
    if _refreeze not in gc.callbacks:
        gc.callbacks.append(_refreeze)


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse(ErrorBody(detail=detail).model_dump(), status_code=status)


async def _send_error(send: Send, status: int, detail: str, extra: list[Any] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _Gate:
    """ASGI layer: bearer token, body size limit, metrics."""

    def __init__(self, app: ASGIApp, settings: ServeSettings, metrics: ServeMetrics) -> None:
        self.app, self.settings, self.metrics = app, settings, metrics
        self.expected = None if settings.token is None else f"Bearer {settings.token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start, status = time.perf_counter(), [500]

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self._guarded(scope, receive, send_status)
        except ClientDisconnect:  # gone mid-body: no one to answer, nothing wrong here
            status[0] = 499
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.observe(route, scope["method"], status[0], time.perf_counter() - start)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        if self.expected is not None and scope["path"] not in _OPEN_PATHS:
            got = headers.get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                await _send_error(
                    send,
                    401,
                    "missing or wrong bearer token (Authorization: Bearer <token>)",
                    [(b"www-authenticate", b"Bearer")],
                )
                return
        limit = self.settings.max_body
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await _send_error(send, 413, f"request body of {int(length)} bytes exceeds {limit}")
            return
        seen = [0]

        async def counted() -> Message:
            # A body without Content-Length (chunked) is counted as it arrives.
            message = await receive()
            seen[0] += len(message.get("body", b""))
            if seen[0] > limit:
                raise _TooLarge(seen[0])
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge as exc:
            await _send_error(send, 413, f"request body of {exc.size}+ bytes exceeds {limit}")


class _TooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def create_app(settings: ServeSettings) -> FastAPI:
    """The service app: opens (or creates) the store and restores every ranker."""
    store = Store(settings.store, synchronous=settings.synchronous)
    try:
        rankers = Rankers(store, snapshot_every=settings.snapshot_every, limits=settings.limits)
        restore_comparisons(rankers)  # candidates beside production rankers (rollout.py)
    except Exception as exc:
        store.close()
        if settings.snapshot_every < 1:
            raise
        raise StoreDamagedError(  # a log or a snapshot that does not restore
            f"store {settings.store} cannot be served: a ranker does not restore: {exc} "
            "(oltr serve --check tells more)"
        ) from exc
    metrics = ServeMetrics()

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()  # on shutdown: every acknowledged event is already committed

    app = FastAPI(
        title="oltr serve",
        summary="Online learning to rank from restricted feedback",
        lifespan=lifespan,
    )
    app.state.rankers, app.state.store, app.state.metrics = rankers, store, metrics
    app.add_exception_handler(RequestError, _request_error)  # type: ignore[arg-type]
    app.add_exception_handler(InputError, _input_error)  # type: ignore[arg-type]
    app.add_exception_handler(405, _method_not_allowed)
    hot, templates = _routes(app, rankers, settings, metrics)
    app.include_router(ui_router(rankers))  # /ui/, /stats, /rankers/{name}/stats
    app.include_router(candidate_router(rankers))  # …/candidate, …/comparison, …/rollout
    app.include_router(evaluation_router(rankers))  # …/evaluate (off-policy)

    app.add_middleware(HotPath, routes=hot, templates=templates)  # inside the gate
    app.add_middleware(_Gate, settings=settings, metrics=metrics)
    return app


async def _request_error(_: Request, exc: RequestError) -> JSONResponse:
    return _error(exc.status, str(exc))


async def _method_not_allowed(request: Request, _: Exception) -> JSONResponse:
    # Each method of a path is its own route; Starlette's 405 names only the first route's
    # methods in ``Allow``: name those of every route of the path instead.
    allowed: set[str] = set()
    for route in request.app.routes:
        if isinstance(route, Route) and route.matches(request.scope)[0] != Match.NONE:
            allowed |= route.methods or set()
    headers = {"Allow": ", ".join(sorted(allowed))}
    return JSONResponse({"detail": "Method Not Allowed"}, status_code=405, headers=headers)


async def _input_error(_: Request, exc: InputError) -> JSONResponse:
    # A learner refusing what a request gave it (a grade its gain cannot hold, say); the
    # ranker has already restored its state from before the request.
    return _error(422, str(exc))


_ERRORS: dict[int | str, dict[str, Any]] = {
    **{code: {"model": ErrorBody} for code in (400, 401, 404, 409, 410, 413)},
    422: {"model": ValidationErrorBody},
}
# The feedback of an impression: an OpenAPI link from a rank's answer to its feedback route.
_RANKED: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "the impression to send feedback for",
        "links": {
            "feedback": {
                "operationId": "feedback_rankers__name__feedback_post",
                "parameters": {"name": "$request.path.name"},
                "requestBody": {"impression": "$response.body#/impression"},
            }
        },
    }
}
_METRICS_TEXT: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "the metrics in Prometheus' text format",
        "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
    },
    401: {"model": ErrorBody},
}


def _routes(
    app: FastAPI, rankers: Rankers, settings: ServeSettings, metrics: ServeMetrics
) -> tuple[HotRoutes, dict[str, Any]]:
    def info(name: str) -> RankerInfo:
        return RankerInfo(**rankers.get(name).describe())

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", response_class=Response, responses=_METRICS_TEXT)
    def prometheus() -> Response:
        metrics.rankers.set(len(list(rankers)))
        commits, writes = rankers.store.commits
        metrics.store_commits.set(commits)
        metrics.store_writes.set(writes)
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/rankers", responses=_ERRORS)
    def list_rankers() -> RankerList:
        return RankerList(rankers=[RankerInfo(**r.describe()) for r in rankers])

    same: dict[int | str, dict[str, Any]] = {
        200: {"model": RankerInfo, "description": "the same definition was there already"}
    }

    @app.put(
        "/rankers/{name}",
        status_code=201,
        responses={**_ERRORS, **same},
        response_model=RankerInfo,
        openapi_extra=_request_body(RankerIn),
    )
    async def put_ranker(name: str, request: Request, response: Response) -> RankerInfo:
        # The body is read as JSON whatever its Content-Type says, as rank and feedback
        # read theirs: `curl -d '{...}'` sends a form type and should still work.
        body = await _parse(request, RankerIn)
        if not name or len(name) > 200:
            raise RequestError("a ranker name has 1 to 200 characters")

        def create() -> bool:
            raw = body.model_dump()
            if "normalize" not in body.model_fields_set:  # PUT again as before: the same ranker
                existing = rankers.find(name)
                if existing is not None:
                    raw["normalize"] = existing.definition.normalize
            if raw["init"] is not None:  # the weights go into the definition, read once
                raw["init"] = read_init(raw["init"], raw["n_features"])
            return rankers.put(name, RankerDefinition(**raw))

        created = await anyio.to_thread.run_sync(create)
        response.status_code = 201 if created else 200
        return info(name)

    @app.get("/rankers/{name}", responses=_ERRORS)
    def get_ranker(name: str) -> RankerInfo:
        return info(name)

    @app.delete("/rankers/{name}", status_code=204, responses=_ERRORS)
    def delete_ranker(name: str) -> Response:
        rankers.delete(name)
        return Response(status_code=204)

    hot = HotRoutes(rankers, settings.limits, settings.impression_ttl, metrics)

    # The bodies these two routes accept are decoded by the hot path (hotpath.py) before
    # they get here; what reaches them is what it refused, to be refused as FastAPI does.
    @app.post(
        "/rankers/{name}/rank",
        responses={**_ERRORS, **_RANKED},
        response_model=RankResponse,
        openapi_extra=_request_body(RankRequest, binary=True),
    )
    async def rank(name: str, request: Request) -> Response:
        body = await _parse(request, RankRequest)
        out, _ = await hot.rank(name, body.features)
        return JSONResponse(out)

    @app.post(
        "/rankers/{name}/feedback",
        responses=_ERRORS,
        response_model=FeedbackResponse,
        openapi_extra=_request_body(FeedbackRequest),
    )
    async def feedback(name: str, request: Request) -> Response:
        body = await _parse(request, FeedbackRequest)
        payload = body.model_dump(exclude_none=True, exclude={"impression"})
        return JSONResponse(await hot.feedback(name, body.impression, payload))

    paths = {"rank": "/rankers/{name}/rank", "feedback": "/rankers/{name}/feedback"}
    return hot, {kind: _route(app, path) for kind, path in paths.items()}


def _route(app: FastAPI, path: str) -> Any:
    return next(r for r in app.routes if getattr(r, "path", None) == path)


def _request_body(model: type[BaseModel], binary: bool = False) -> dict[str, Any]:
    """The OpenAPI request body of a route that reads its body itself.

    ``binary``: the features may also come as a ``.npy`` file (see :mod:`oltr.serve.hotpath`).
    """
    content: dict[str, Any] = {"application/json": {"schema": model.model_json_schema()}}
    if binary:
        content[NPY_MEDIA_TYPE] = {
            "schema": {
                "type": "string",
                "format": "binary",
                "description": "features as a .npy file: 2-D little-endian float32 or float64, "
                "one row per candidate",
            }
        }
    return {"requestBody": {"required": True, "content": content}}


async def _parse(request: Request, model: type[_Body]) -> _Body:
    """The request body validated as ``model`` in one pass of pydantic's JSON parser.

    A body it refuses goes the way FastAPI takes a body (the standard JSON
    parser, then validation of the Python objects), so that a 422 says exactly
    what FastAPI says; only refused bodies pay for that.
    """
    raw = await request.body()
    try:
        return model.model_validate_json(raw)
    except ValidationError:
        pass
    if not raw:
        missing = {"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}
        raise RequestValidationError([missing])
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _json_invalid(exc.pos, exc.msg) from None
    except UnicodeDecodeError as exc:
        raise _json_invalid(exc.start, f"the body is not UTF-8: {exc.reason}") from None
    except RecursionError:
        raise _json_invalid(0, "the body nests too deep") from None
    try:
        return model.model_validate(data, from_attributes=True)  # as FastAPI validates a body
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        raise RequestValidationError(errors) from None


def _json_invalid(pos: int, error: str) -> RequestValidationError:
    bad = {
        "type": "json_invalid",
        "loc": ("body", pos),
        "msg": "JSON decode error",
        "input": {},
        "ctx": {"error": error},
    }
    return RequestValidationError([bad])
