"""Bounded connections for ``oltr serve``: uvicorn's limits, and a timeout on request heads.

uvicorn closes a connection that stays idle ``timeout_keep_alive`` seconds
*after a response*, and answers 503 to requests once ``limit_concurrency``
connections or tasks are open; it has no timeout for a request head that never
completes: a client that opens a connection and sends half a header line holds
it (and a file descriptor) forever, and enough of them starve the service. The
HTTP protocol here (uvicorn's httptools protocol) closes a connection whose
request head is not complete ``timeout_header`` seconds after the connection
opened or the request began, and answers 431 to a head larger than
``max_head_bytes`` (httptools itself sets no bound).
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["ConnectionLimits", "raise_open_files_limit", "uvicorn_config"]


@dataclass(frozen=True)
class ConnectionLimits:
    """The connection settings of ``oltr serve``.

    Parameters
    ----------
    timeout_keep_alive
        Seconds an idle connection is kept open after a response.
    timeout_header
        Seconds a client has to send a complete request head (line and headers).
    limit_concurrency
        Open connections (or requests in progress) beyond which a request gets a 503.
    timeout_graceful_shutdown
        Seconds a stopping server waits for requests in progress.
    max_head_bytes
        Largest request head (request line and headers) in bytes; 431 beyond.
    """

    timeout_keep_alive: int = 5
    timeout_header: float = 10.0
    limit_concurrency: int = 1000
    timeout_graceful_shutdown: int = 30
    max_head_bytes: int = 65536

    def __post_init__(self) -> None:
        for name in ("timeout_keep_alive", "timeout_header", "limit_concurrency", "max_head_bytes"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {value}")
        if self.timeout_graceful_shutdown < 0:
            raise ValueError(
                f"--timeout-graceful-shutdown must be >= 0, got {self.timeout_graceful_shutdown}"
            )


_TOO_LARGE_BODY = b'{"detail": "request head (line and headers) too large"}'
_HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_TOO_LARGE_BODY), _TOO_LARGE_BODY)
)


class _HeadTimeoutProtocol(HttpToolsProtocol):
    """httptools protocol that closes a connection whose request head does not complete."""

    timeout_header = 10.0
    max_head_bytes = 65536
    _head_timer: asyncio.TimerHandle | None = None
    _head_bytes = 0

    def _arm(self) -> None:
        self._disarm()
        self._head_bytes = 0
        self._head_timer = self.loop.call_later(self.timeout_header, self._head_timeout)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_timer is None:  # not inside a request head
            return
        self._head_bytes += len(data)
        if self._head_bytes > self.max_head_bytes and not self.transport.is_closing():
            self._disarm()
            self.transport.write(_HEAD_TOO_LARGE)
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        self._disarm()  # idle from here on: the keep-alive timeout's job
        super().on_response_complete()


def uvicorn_config(app: Any, host: str, port: int, limits: ConnectionLimits, **kw: Any) -> Any:
    """The ``uvicorn.Config`` of the service with ``limits`` (``kw``: other settings)."""
    protocol = type(
        "HeadTimeoutProtocol",
        (_HeadTimeoutProtocol,),
        {"timeout_header": limits.timeout_header, "max_head_bytes": limits.max_head_bytes},
    )
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        timeout_keep_alive=limits.timeout_keep_alive,
        limit_concurrency=limits.limit_concurrency,
        timeout_graceful_shutdown=limits.timeout_graceful_shutdown,
        **kw,
    )


def raise_open_files_limit(connections: int) -> None:
    """Raise the soft limit on open files to room for ``connections`` (up to the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = connections + 256  # the store, the log, the libraries
    if soft != resource.RLIM_INFINITY and soft < want:
        top = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (top, hard))
