"""Prometheus metrics of the service (text exposition format at ``GET /metrics``).

Each app has its own registry, so several apps in one process (tests) do not
share counters.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "ServeMetrics"]

#: Latency buckets in seconds: the service aims at milliseconds.
_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class ServeMetrics:
    """Requests, latency histograms, learned rounds and errors."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "oltr_requests", "HTTP requests", ["route", "method", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "oltr_request_seconds",
            "Request latency",
            ["route", "method"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "oltr_errors", "Answers with status >= 400", ["route", "status"], registry=self.registry
        )
        self.rounds = Counter(
            "oltr_rounds", "Feedback rounds learned", ["ranker"], registry=self.registry
        )
        self.impressions = Counter(
            "oltr_impressions", "Lists ranked", ["ranker"], registry=self.registry
        )
        self.rankers = Gauge("oltr_rankers", "Rankers held", registry=self.registry)
        self.store_commits = Gauge(
            "oltr_store_commits", "Transactions the store has committed", registry=self.registry
        )
        self.store_writes = Gauge(
            "oltr_store_writes",
            "Writes committed in them (more than commits when requests share one)",
            registry=self.registry,
        )

        # The labelled children met so far: looking one up by its labels is most of the
        # cost of counting a request, and a service meets few distinct ones.
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Record one answered request."""
        self._child(self.requests, route, method, str(status)).inc()
        self._child(self.latency, route, method).observe(seconds)
        if status >= 400:
            self._child(self.errors, route, str(status)).inc()

    def impression(self, ranker: str) -> None:
        """Count one list ranked by ``ranker``."""
        self._child(self.impressions, ranker).inc()

    def round(self, ranker: str) -> None:
        """Count one feedback round learned by ``ranker``."""
        self._child(self.rounds, ranker).inc()

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)
