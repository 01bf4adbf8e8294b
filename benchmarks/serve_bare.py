"""The bare HTTP stack of ``oltr serve``: the baseline of ``bench_serve.py``.

A FastAPI app answering ``POST /rankers/{name}/rank`` and ``POST
/rankers/{name}/feedback`` with constant JSON byte strings (the real answers of
``oltr serve``, captured by the benchmark, so the bytes on the wire are the
same), after reading the request body fully. It runs on the same uvicorn
configuration as ``oltr serve`` (``oltr.serve.connections.uvicorn_config``:
httptools with the head timeout, uvloop, the same connection limits and log
level), so the difference between the two servers is the service's own work:
parsing, the ranker, the store and its commit.

Usage: ``python benchmarks/serve_bare.py PORT RANK_FILE FEEDBACK_FILE`` (the
files hold the two response bodies).
"""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn
from fastapi import FastAPI, Request, Response

from oltr.serve.connections import ConnectionLimits, uvicorn_config


def create_bare_app(rank_body: bytes, feedback_body: bytes) -> FastAPI:
    """A FastAPI app with the two routes of a served ranker, answering constants."""
    app = FastAPI()

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    @app.post("/rankers/{name}/rank")
    async def rank(name: str, request: Request) -> Response:
        await request.body()
        return Response(rank_body, media_type="application/json")

    @app.post("/rankers/{name}/feedback")
    async def feedback(name: str, request: Request) -> Response:
        await request.body()
        return Response(feedback_body, media_type="application/json")

    return app


def main(argv: list[str]) -> None:
    """Serve the bare app on 127.0.0.1 at the port of ``argv[0]``."""
    if len(argv) != 3:
        raise SystemExit("usage: serve_bare.py PORT RANK_FILE FEEDBACK_FILE")
    port, rank_file, feedback_file = int(argv[0]), Path(argv[1]), Path(argv[2])
    app = create_bare_app(rank_file.read_bytes(), feedback_file.read_bytes())
    config = uvicorn_config(app, "127.0.0.1", port, ConnectionLimits(), log_level="warning")
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main(sys.argv[1:])
