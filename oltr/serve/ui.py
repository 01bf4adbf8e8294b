"""The page that watches ``oltr serve`` (``GET /ui/``) and the JSON it polls.

Routes (an :class:`fastapi.APIRouter` the app includes):

* ``GET /stats``: every ranker's rounds, impressions and impressions per second;
* ``GET /rankers/{name}/stats``: one ranker's numbers, its feedback by shown
  position and its online quality curve (:mod:`oltr.serve.stats`), with its
  live ``comparison`` and ``rollout`` history (:mod:`oltr.serve.candidates`);
* ``GET /ui/`` and its assets (``/ui`` redirects there): a static page, plain
  HTML and a small script with Chart.js vendored in the package
  (``oltr/serve/static/vendor``, no CDN), that polls the two JSON routes every
  few seconds.

The page and its assets hold no data and are served without the bearer token
(:data:`UI_OPEN_PATHS`); every number comes from the JSON routes, which need it
like every other route. The page sends the token as ``Authorization: Bearer``:
typed once into its form, or given in the address's fragment,
``/ui/#token=…``, which a browser never sends to the server (so it is in no
request line and no log); the script keeps it in the tab's ``sessionStorage``
and removes the fragment from the address bar.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import RedirectResponse

from oltr.serve.bodies import ErrorBody, ValidationErrorBody
from oltr.serve.candidates import live_fields
from oltr.serve.protocol import RequestError
from oltr.serve.rankers import Rankers
from oltr.serve.stats import RankerStats, ServeStats, StatsOverview

__all__ = ["ASSETS", "UI_OPEN_PATHS", "ui_router"]

#: The page's files, by the path under ``/ui/`` they are served at: (file under
#: ``oltr/serve/static``, media type).
ASSETS: dict[str, tuple[str, str]] = {
    "": ("index.html", "text/html; charset=utf-8"),
    "ui.js": ("ui.js", "text/javascript; charset=utf-8"),
    "ui.css": ("ui.css", "text/css; charset=utf-8"),
    "vendor/chart.umd.min.js": ("vendor/chart.umd.min.js", "text/javascript; charset=utf-8"),
    "vendor/chart.js.LICENSE.md": ("vendor/chart.js.LICENSE.md", "text/markdown; charset=utf-8"),
}
#: Paths served without the bearer token: the page and its static files, which hold no data.
UI_OPEN_PATHS = frozenset({"/ui", *(f"/ui/{path}" for path in ASSETS)})

#: The page may load only its own files and talk only to its own origin.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_ERRORS: dict[int | str, dict[str, Any]] = {
    **{code: {"model": ErrorBody} for code in (401, 404)},
    422: {"model": ValidationErrorBody},
}

Window = Annotated[
    float,
    Query(gt=0, le=3600, allow_inf_nan=False, description="seconds of the rate's window"),
]


def _read(name: str) -> bytes:
    return files("oltr.serve").joinpath("static", *name.split("/")).read_bytes()


def ui_router(rankers: Rankers) -> APIRouter:
    """The routes of the page and of its JSON, over ``rankers`` and their store."""
    stats = ServeStats(rankers.store.path)
    assets = {path: (_read(name), media) for path, (name, media) in ASSETS.items()}
    router = APIRouter()

    @router.get("/stats", responses=_ERRORS)
    def overview(window: Window = 10.0) -> StatsOverview:
        """Every ranker's counters, and its impressions per second over the last ``window`` s."""
        return stats.overview(list(rankers), window)

    @router.get("/rankers/{name}/stats", responses=_ERRORS)
    def ranker_stats(
        name: str,
        window: Window = 10.0,
        bucket: Annotated[int, Query(ge=1, le=1_000_000, description="rounds per point")] = 50,
        points: Annotated[
            int, Query(ge=1, le=10_000, description="latest points of the curve")
        ] = 500,
    ) -> RankerStats:
        """One ranker's counters, feedback by position and online quality curve."""
        out = stats.ranker(rankers.get(name), window=window, bucket=bucket, points=points)
        return out.model_copy(update=live_fields(rankers, name))  # comparison and rollout

    @router.get("/ui", include_in_schema=False)
    def page_redirect() -> RedirectResponse:
        return RedirectResponse("ui/", status_code=307)  # relative: works behind a path prefix

    @router.get("/ui/{path:path}", include_in_schema=False)
    def page(path: str) -> Response:
        if path not in assets:
            raise RequestError(f"the page has no file {path!r}", 404)
        body, media = assets[path]
        return Response(body, media_type=media, headers=_HEADERS)

    return router
