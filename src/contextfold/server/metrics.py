"""Prometheus metrics (``GET /metrics``): requests, latencies, folds, summarizer tokens.

Each app has its own registry. With several worker processes (``contextfold serve
--workers N`` sets ``PROMETHEUS_MULTIPROC_DIR``) every process writes its samples to that
directory and ``/metrics`` aggregates all of them, whichever process answers.
Every label has a fixed set of values, so no client can grow ``/metrics``: routes are
*templates* (``/v1/sessions/{session_id}/messages``) or ``unmatched``, never raw paths;
methods outside :data:`METHODS` count as ``other``; statuses are the ones the app answers.
``/metrics`` renders in a worker thread, never on the event loop.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..outcomes import FoldOutcome

__all__ = ["METHODS", "Metrics", "MetricsMiddleware", "method_label"]

#: The HTTP methods counted by name; any other (a client may send made-up ones) is "other".
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else ``"other"``."""
    return method if method in METHODS else "other"

_access = logging.getLogger("contextfold.server.access")


class Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.requests = Counter(
            "contextfold_http_requests_total",
            "HTTP requests answered",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "contextfold_http_request_duration_seconds",
            "Time to answer an HTTP request",
            ["method", "route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.folds = Counter(
            "contextfold_folds_total",
            "Folds run by this service, by outcome",
            ["outcome"],
            registry=self.registry,
        )
        self.summarizer_tokens = Counter(
            "contextfold_summarizer_tokens_total",
            "Summarizer tokens spent by folds",
            ["direction"],
            registry=self.registry,
        )
        self.messages = Counter(
            "contextfold_messages_appended_total",
            "Messages appended (duplicates excluded)",
            registry=self.registry,
        )
        # labelled children by label values (a bounded set, see the module): prometheus's
        # ``labels()`` checks and locks on every call, which every request paid twice
        self._answered: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def answered(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request and its time."""
        key = (method, route, status)
        children = self._answered.get(key)
        if children is None:
            children = self._answered[key] = (
                self.requests.labels(method, route, str(status)),
                self.latency.labels(method, route),
            )
        children[0].inc()
        children[1].observe(seconds)

    def record(self, scope: Scope, status: int, seconds: float) -> None:
        """Count and time one answered HTTP request by its route template, and write its
        access log line (method, route template, status, milliseconds, tenant — no query
        string, no body)."""
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        method = method_label(scope.get("method", ""))
        self.answered(method, route, status, seconds)
        if _access.isEnabledFor(logging.INFO):
            tenant = scope.get("state", {}).get("tenant")
            _access.info(
                "%s %s %d %.1fms tenant=%s",
                method,
                route,
                status,
                seconds * 1000,
                tenant.name if tenant is not None else "-",
            )

    def fold(self, outcome: FoldOutcome | None) -> None:
        if outcome is None:
            return
        self.folds.labels(outcome.status).inc()
        if outcome.input_tokens:
            self.summarizer_tokens.labels("input").inc(outcome.input_tokens)
        if outcome.output_tokens:
            self.summarizer_tokens.labels("output").inc(outcome.output_tokens)

    def render(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        if self.multiprocess:
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """Counts and times every HTTP request by route template and writes its access log
    line (:meth:`Metrics.record`)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def tracking_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        finally:
            self.metrics.record(scope, status, time.perf_counter() - started)
