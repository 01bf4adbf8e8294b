"""The two routes on the hot path, ``rank`` and ``feedback``, answered in one ASGI layer.

Every rank and feedback request of a live system goes through here. The layer
matches ``POST /rankers/{name}/rank`` and ``…/feedback`` itself and decodes
the body with a compiled JSON decoder (msgspec) straight into the strict types
of :mod:`oltr.serve.bodies` — a number is a JSON number, never a boolean or a
string; unknown fields are refused — and the feature rows into one float64
array, without FastAPI's routing, dependency solving or pydantic models.
A body that decoder refuses is handed, unchanged, to the FastAPI route of the
same path, whose 422 says exactly what FastAPI says (the two decoders accept
the same bodies, as the tests check); only refused bodies pay for that.

A rank request may also send its features as a NumPy ``.npy`` file
(``Content-Type: application/x-npy``): a 2-D array of little-endian float32
or float64, one row per candidate. That skips JSON altogether, which pays for
large lists (a 200 × 136 list is 27,200 numbers).

The ranker's work runs under its lock on the event loop, or in a worker
thread when it grows with a large list or item set (:data:`OFF_LOOP_FROM`), so
that it never stalls other rankers' requests; then the request awaits the
commit of its write (the store's group commit, :mod:`oltr.serve.groupcommit`),
so the event loop serves other requests while a commit is in flight and their
writes can share it.
"""

from __future__ import annotations

import io
import itertools
import re
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec
import numpy as np
import simdjson
from starlette.requests import ClientDisconnect

from oltr.errors import InputError
from oltr.serve.commitwait import wait_commit
from oltr.serve.limits import Limits
from oltr.serve.metrics import ServeMetrics
from oltr.serve.protocol import RequestError
from oltr.serve.rankers import Ranker, Rankers

__all__ = [
    "NPY_MEDIA_TYPE",
    "OFF_LOOP_FROM",
    "HotPath",
    "HotRoutes",
    "decode_feedback",
    "decode_npy",
    "decode_rank",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Items (fixed item sets) or rows × features (lists) from which a request's work runs in a
#: worker thread rather than on the event loop.
OFF_LOOP_FROM = 10_000
#: The media type of a rank request whose features are a NumPy ``.npy`` file.
NPY_MEDIA_TYPE = "application/x-npy"
_HOT = re.compile(r"/rankers/([^/]+)/(rank|feedback)")
_NPY_DTYPES = (np.dtype("<f4"), np.dtype("<f8"))


class _RankBody(msgspec.Struct, forbid_unknown_fields=True):
    features: list[list[float]] | None = None


class _FeedbackBody(msgspec.Struct, forbid_unknown_fields=True):
    impression: str
    labels: list[float] | None = None
    chosen: list[int] | None = None
    clicks: list[int] | None = None


_RANK = msgspec.json.Decoder(_RankBody)
_FEEDBACK = msgspec.json.Decoder(_FeedbackBody)
_ENCODE = msgspec.json.Encoder().encode
_SIMD = threading.local()  # each thread its own simdjson parser


def decode_rank(raw: bytes) -> Any:
    """The features of a JSON rank body: rows of equal length as one float64 matrix.

    Rows of different lengths, an empty list or None come as they are, for the
    route's checks to name. Raises :class:`msgspec.DecodeError` for a body the
    API's :class:`~oltr.serve.bodies.RankRequest` might refuse.
    """
    matrix = _simd_matrix(raw)
    if matrix is not None:
        return matrix
    rows = _RANK.decode(raw).features
    widths = set(map(len, rows or ()))
    if rows is None or len(widths) != 1:
        return rows
    (width,) = widths
    flat = np.fromiter(itertools.chain.from_iterable(rows), np.float64, len(rows) * width)
    return flat.reshape(len(rows), width)


def _simd_matrix(raw: bytes) -> np.ndarray[Any, Any] | None:
    """The common body, ``{"features": [[numbers…], …]}`` with rows of one length, read
    by simdjson straight into float64 (no Python float per number); None for any other.

    simdjson reads each number as the nearest float64 (as msgspec and Python's
    float() do) and an integer as its nearest float64; anything else (bigger
    integers, other keys, a key twice, ragged or nested rows) goes to the msgspec
    decoder, which decides as before.
    """
    parser = _SIMD.__dict__.get("parser") or _new_parser()
    try:
        doc = parser.parse(raw)
        if not isinstance(doc, simdjson.Object) or list(doc.keys()) != ["features"]:
            return None
        rows = doc["features"]
        if not isinstance(rows, simdjson.Array) or len(rows) == 0:
            return None
        # A number among the rows has no len (TypeError); an object or a string has one,
        # and makes as_buffer raise TypeError.
        widths = set(map(len, rows))  # type: ignore[arg-type]
        flat = np.frombuffer(rows.as_buffer(of_type="d"), np.float64)  # numbers only, flattened
    except (ValueError, TypeError):
        return None
    except RuntimeError:  # a parser still in use (an earlier document alive) or a big integer
        _new_parser()
        return None
    n = len(rows)
    # Every leaf is a number, so each "[" opens an array: the list and its n rows, none nested.
    (width,) = widths if len(widths) == 1 else (-1,)
    if width < 0 or flat.size != n * width or raw.count(b"[") != n + 1:
        return None
    return flat.reshape(n, width)


def _new_parser() -> Any:
    """A simdjson parser of this thread's own (a parser holds one document at a time)."""
    _SIMD.parser = simdjson.Parser()
    return _SIMD.parser


def decode_feedback(raw: bytes) -> tuple[str, dict[str, Any]]:
    """The impression of a JSON feedback body and what it reveals (the fields sent).

    Raises :class:`msgspec.DecodeError` for a body the API's
    :class:`~oltr.serve.bodies.FeedbackRequest` might refuse.
    """
    body = _FEEDBACK.decode(raw)
    fields = ("labels", "chosen", "clicks")
    payload = {key: value for key in fields if (value := getattr(body, key)) is not None}
    return body.impression, payload


def decode_npy(raw: bytes) -> np.ndarray[Any, Any]:
    """The feature matrix of a ``.npy`` body: 2-D, little-endian float32 or float64.

    Raises :class:`RequestError` (422) naming what is wrong. float32 values
    become float64 exactly.
    """
    fmt = np.lib.format
    stream = io.BytesIO(raw)  # shares ``raw``: nothing is copied before the data
    try:
        version = fmt.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(stream)
        else:
            shape, fortran, dtype = fmt.read_array_header_2_0(stream)
    except (ValueError, OSError, SyntaxError) as exc:
        raise RequestError(f"the {NPY_MEDIA_TYPE} body is not a .npy file: {exc}") from None
    if dtype not in _NPY_DTYPES:
        raise RequestError(
            f"the .npy features have dtype {dtype.str}; send little-endian float32 or float64"
        )
    if len(shape) != 2:
        raise RequestError(f"the .npy features have shape {shape}; send (rows, features)")
    count, start = shape[0] * shape[1], stream.tell()
    if len(raw) - start != count * dtype.itemsize:
        got = len(raw) - start
        raise RequestError(
            f"the .npy features of shape {shape} and dtype {dtype.str} need "
            f"{count * dtype.itemsize} bytes of data, the body has {got}"
        )
    flat = np.frombuffer(raw, dtype, count, start)
    x = flat.reshape(shape, order="F" if fortran else "C")
    return np.array(x, dtype=np.float64, order="C")  # a copy: the learner may keep it


@dataclass
class HotRoutes:
    """What ``rank`` and ``feedback`` do once their bodies are decoded, whichever decoder did."""

    rankers: Rankers
    limits: Limits
    impression_ttl: float
    metrics: ServeMetrics

    async def rank(self, name: str, features: Any) -> tuple[dict[str, Any], bool]:
        """One list ranked by ``name``: the answer, and whether it is large (to encode off-loop)."""
        ranker = self.rankers.get(name)
        cells = self.limits.check_cells(features)
        heavy = max(cells, ranker.definition.n_items or 0) >= OFF_LOOP_FROM
        out = await _apply(ranker, lambda: ranker.rank_locked(features), heavy)
        self.metrics.impression(name)
        return out, heavy

    async def feedback(self, name: str, impression: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Learn from the feedback on one impression of ``name``; the answer body."""
        ranker = self.rankers.get(name)
        ttl = self.impression_ttl
        heavy = (ranker.definition.n_items or 0) >= OFF_LOOP_FROM
        out = await _apply(ranker, lambda: ranker.feedback_locked(impression, payload, ttl), heavy)
        self.metrics.round(name)
        return {"round": out["round"], "outcome": out.get("outcome")}


async def _apply(
    ranker: Ranker, step: Callable[[], tuple[dict[str, Any], Future[int]]], heavy: bool = False
) -> Any:
    """Run ``step`` under the ranker's lock, then wait (off the lock) for its write's commit.

    A ``heavy`` step runs in a worker thread, the lock held throughout: the ranker's
    requests stay serialised, and submit their writes in the order they are applied,
    while the event loop serves everything else. Should the lock be held by a route
    running on the thread pool, it is awaited in a worker thread rather than on the loop.
    """
    lock = ranker.lock
    if not lock.acquire(blocking=False):
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(lock.acquire)
    try:
        if heavy:
            with anyio.CancelScope(shield=True):  # an applied request is never abandoned
                answer, done = await anyio.to_thread.run_sync(step)
        else:
            answer, done = step()
    finally:
        lock.release()
    # A client that goes away stops the wait, never the write of an applied request.
    await wait_commit(done)
    return answer


class HotPath:
    """ASGI layer: ``POST /rankers/{name}/rank`` and ``…/feedback`` without FastAPI's routing.

    ``templates`` maps ``"rank"`` and ``"feedback"`` to the FastAPI routes of those
    paths; the layer puts them in the scope as FastAPI would, so the metrics name
    the route the same way.
    """

    def __init__(self, app: ASGIApp, routes: HotRoutes, templates: dict[str, Any]) -> None:
        self.app, self.routes, self.templates = app, routes, templates

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hit = None
        if scope["type"] == "http" and scope["method"] == "POST":
            hit = _HOT.fullmatch(scope["path"])
        if hit is None:
            await self.app(scope, receive, send)
            return
        scope["route"] = self.templates[hit[2]]  # set first: a client gone mid-body is counted
        raw = await _read_body(receive)
        if not await self._answer(scope, send, hit[1], hit[2], raw):
            await self.app(scope, _replay(raw, receive), send)

    async def _answer(self, scope: Scope, send: Send, name: str, kind: str, raw: bytes) -> bool:
        """Answer the request; False when its JSON body is for the FastAPI route to refuse."""
        try:
            if kind == "rank":
                npy = _media_type(scope) == NPY_MEDIA_TYPE
                features = decode_npy(raw) if npy else decode_rank(raw)
            else:
                impression, payload = decode_feedback(raw)
        except msgspec.DecodeError:
            return False
        except RequestError as exc:
            await _send_json(send, exc.status, {"detail": str(exc)})
            return True
        status, heavy = 200, False
        try:
            if kind == "rank":
                answer, heavy = await self.routes.rank(name, features)
            else:
                answer = await self.routes.feedback(name, impression, payload)
        except RequestError as exc:
            status, answer = exc.status, {"detail": str(exc)}
        except InputError as exc:  # the learner refused a value; it restored its state
            status, answer = 422, {"detail": str(exc)}
        await _send_json(send, status, answer, heavy)
        return True


def _media_type(scope: Scope) -> str:
    for key, value in scope["headers"]:
        if key == b"content-type":
            return str(value.decode("latin-1").split(";", 1)[0].strip().lower())
    return ""


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(raw: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body already read, then whatever comes next."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return again


async def _send_json(send: Send, status: int, answer: Any, heavy: bool = False) -> None:
    body = await anyio.to_thread.run_sync(_ENCODE, answer) if heavy else _ENCODE(answer)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
