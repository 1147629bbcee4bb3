"""The worker's HTTP server: ``/metrics``, the live alerts page ``/alerts`` and ``/api/alerts``.

One port per worker (``HALLUWATCH_METRICS_PORT``). It runs as a service of the
Faust worker, started with it, so ``/metrics`` answers while tables recover and
the model loads, and Prometheus sees a worker as up as soon as it listens.
"""

from __future__ import annotations

import logging
from importlib import resources
from typing import Any

from aiohttp import web
from mode import Service
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from schemas import Severity
from stream.alert_feed import AlertBuffer, AlertFeed, AlertQuery

log = logging.getLogger("halluwatch.web")
STATIC = ("alerts.html", "alerts.js", "alerts.css")
CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
MAX_LIMIT = 500


def static_file(name: str) -> bytes:
    return resources.files("stream").joinpath("static", name).read_bytes()


def parse_query(params: Any) -> AlertQuery:
    """The filters of ``/api/alerts``; a bad value is a 400 naming the accepted ones."""
    severity = params.get("severity", "")
    if severity and severity not in {s.value for s in Severity}:
        raise web.HTTPBadRequest(text=f"severity must be one of {', '.join(s.value for s in Severity)}, not {severity!r}")
    try:
        limit = int(params.get("limit", "100"))
    except ValueError:
        raise web.HTTPBadRequest(text=f"limit must be a whole number, not {params.get('limit')!r}") from None
    return AlertQuery(bot=params.get("bot", ""), severity=severity, limit=min(max(limit, 0), MAX_LIMIT))


def make_web_app(buffer: AlertBuffer, registry: CollectorRegistry | None) -> web.Application:
    """The routes; ``registry`` None means metrics are off and ``/metrics`` is not served."""
    pages = {name: static_file(name) for name in STATIC}

    async def metrics(request: web.Request) -> web.Response:
        assert registry is not None
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def api_alerts(request: web.Request) -> web.Response:
        return web.json_response(buffer.as_json(parse_query(request.query)))

    def page(name: str) -> Any:
        content_type = CONTENT_TYPES[name[name.rindex("."):]]

        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=pages[name], content_type=content_type, charset="utf-8")

        return handler

    async def index(request: web.Request) -> web.Response:
        raise web.HTTPFound("/alerts")

    app = web.Application()
    app.router.add_get("/", index)
    app.router.add_get("/alerts", page("alerts.html"))
    for name in ("alerts.js", "alerts.css"):
        app.router.add_get(f"/static/{name}", page(name))
    app.router.add_get("/api/alerts", api_alerts)
    if registry is not None:
        app.router.add_get("/metrics", metrics)
    return app


async def serve(app: web.Application, host: str, port: int) -> web.AppRunner:
    """Serve ``app`` on ``host:port`` until the returned runner's ``cleanup()``."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


class WorkerWeb(Service):
    """Serves the routes on ``host:port`` and feeds the alert buffer from the alerts topic."""

    def __init__(self, host: str, port: int, feed: AlertFeed, registry: CollectorRegistry | None, **kwargs: Any):
        super().__init__(**kwargs)
        self.host = host
        self.port = port
        self.feed = feed
        self.registry = registry
        self._runner: web.AppRunner | None = None

    async def on_start(self) -> None:
        self._runner = await serve(make_web_app(self.feed.buffer, self.registry), self.host, self.port)
        self.feed.start()
        log.info("serving /metrics, /alerts and /api/alerts on http://%s:%d", self.host, self.port)

    async def on_stop(self) -> None:
        await self.feed.stop()
        if self._runner is not None:
            await self._runner.cleanup()
