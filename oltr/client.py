"""A small HTTP client of ``oltr serve`` (httpx).

>>> # with a service on 127.0.0.1:8000:
>>> # c = OltrClient("http://127.0.0.1:8000")
>>> # c.put_ranker("web", learner="rtopk", n_features=46, horizon=10_000)
>>> # out = c.rank("web", features)
>>> # c.feedback("web", out["impression"], labels=[2])
"""

from __future__ import annotations

import io
from typing import Any

import httpx
import numpy as np
from numpy.typing import ArrayLike

__all__ = ["OltrClient", "ServeError"]


class ServeError(RuntimeError):
    """An answer with status >= 400, with the service's message."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


class OltrClient:
    """Calls the service's routes; raises :class:`ServeError` on a 4xx/5xx answer.

    Parameters
    ----------
    base_url
        E.g. ``"http://127.0.0.1:8000"``.
    token
        Bearer token when the service was started with ``--token-file``.
    timeout
        Seconds per request.
    binary
        Send the features of :meth:`rank` as a NumPy ``.npy`` file
        (``Content-Type: application/x-npy``, float64) rather than JSON: no
        number is printed or parsed, which pays for large lists.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        binary: bool = False,
    ) -> None:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout)
        self.binary = binary

    def __enter__(self) -> OltrClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = self._http.request(method, path, **kwargs)
        if resp.status_code >= 400:
            try:
                detail = resp.json().get("detail", resp.text)
            except ValueError:
                detail = resp.text
            raise ServeError(resp.status_code, detail)
        return None if resp.status_code == 204 else resp.json()

    def health(self) -> bool:
        """True when ``/healthz`` answers."""
        return bool(self._call("GET", "/healthz")["status"] == "ok")

    def put_ranker(self, name: str, **definition: Any) -> dict[str, Any]:
        """Create ranker ``name`` (or confirm it); ``definition`` as in ``PUT /rankers/{name}``."""
        return dict(self._call("PUT", f"/rankers/{name}", json=definition))

    def ranker(self, name: str) -> dict[str, Any]:
        """``GET /rankers/{name}``."""
        return dict(self._call("GET", f"/rankers/{name}"))

    def rankers(self) -> list[dict[str, Any]]:
        """``GET /rankers``."""
        return list(self._call("GET", "/rankers")["rankers"])

    def delete_ranker(self, name: str) -> None:
        """``DELETE /rankers/{name}``."""
        self._call("DELETE", f"/rankers/{name}")

    def rank(self, name: str, features: ArrayLike | None = None) -> dict[str, Any]:
        """Rank one list: ``features`` of shape (m, d), or None for a fixed item set."""
        path = f"/rankers/{name}/rank"
        if features is None:
            return dict(self._call("POST", path, json={}))
        x = np.asarray(features, dtype="<f8")
        if not self.binary:
            return dict(self._call("POST", path, json={"features": x.tolist()}))
        buffer = io.BytesIO()
        np.save(buffer, x, allow_pickle=False)
        headers = {"Content-Type": "application/x-npy"}
        return dict(self._call("POST", path, content=buffer.getvalue(), headers=headers))

    def feedback(self, name: str, impression: str, **feedback: Any) -> dict[str, Any]:
        """Send ``labels=``, ``chosen=`` or ``clicks=`` for ``impression``."""
        body = {"impression": impression, **feedback}
        return dict(self._call("POST", f"/rankers/{name}/feedback", json=body))

    def metrics(self) -> str:
        """The Prometheus text of ``/metrics``."""
        resp = self._http.get("/metrics")
        resp.raise_for_status()
        return resp.text
