"""`/healthz`, `/readyz` and `/metrics`.

- `/healthz` (liveness): the process answers. It touches no dependency, so a
  PostgreSQL outage never makes an orchestrator restart every API process.
- `/readyz` (readiness): PostgreSQL answers `SELECT 1` and Redis answers PING,
  each within a short timeout; 503 names the check that failed. Redis is only a
  hint channel (moves are accepted without it), so `?optional=redis` reports it
  without failing on it: the Kubernetes probe uses that, so a Redis outage does
  not take every API pod out of the Service.
- `/metrics`: Prometheus text exposition (see `service.ops.metrics`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any

from litestar import Request, Response, Router, get
from litestar.datastructures import State
from litestar.params import QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from service.ops import metrics
from service.ops.stopping import process_stop

CHECK_TIMEOUT_S = 2.0


@get("/healthz", operation_id="healthz", summary="Liveness: the process answers")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


async def _check_postgres(state: State) -> None:
    pool = getattr(state, "pool", None)
    if pool is not None:
        async with pool.connection(timeout=CHECK_TIMEOUT_S) as conn:
            await conn.execute("SELECT 1")
        return
    import psycopg

    url = state.settings.database.url
    if not url:
        raise RuntimeError("DATABASE_URL is not set")
    async with await psycopg.AsyncConnection.connect(
        url, connect_timeout=max(1, int(CHECK_TIMEOUT_S))
    ) as conn:
        await conn.execute("SELECT 1")


async def _check_redis(state: State) -> None:
    client = getattr(state, "redis", None)
    if client is not None:
        await client.ping()
        return
    url = state.settings.redis.url
    if not url:
        # The API serves without Redis by design (no live hints, no jobs): not a failure.
        raise _NotConfigured("REDIS_URL is not set")
    from redis.asyncio import Redis

    client = Redis.from_url(
        url, socket_timeout=CHECK_TIMEOUT_S, socket_connect_timeout=CHECK_TIMEOUT_S
    )
    try:
        await client.ping()
    finally:
        await client.aclose()


class _NotConfigured(Exception):
    pass


async def _timed(name: str, check: Any, state: State) -> tuple[str, dict[str, Any]]:
    started = time.perf_counter()
    try:
        await asyncio.wait_for(check(state), CHECK_TIMEOUT_S)
        result: dict[str, Any] = {"ok": True}
    except _NotConfigured as absent:
        result = {"ok": True, "configured": False, "note": str(absent)}
    except TimeoutError:
        result = {"ok": False, "error": f"no answer within {CHECK_TIMEOUT_S:g}s"}
    except Exception as exc:  # any failure is "not ready", reported by name
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return name, result


@get("/readyz", operation_id="readyz", summary="Readiness: PostgreSQL and Redis answer")
async def readyz(
    request: Request[Any, Any, Any],
    optional: Annotated[str, QueryParameter(description="Checks reported but not required")] = "",
) -> Response[dict[str, Any]]:
    state = request.app.state
    results = dict(
        await asyncio.gather(
            _timed("postgres", _check_postgres, state),
            _timed("redis", _check_redis, state),
        )
    )
    tolerated = {name.strip() for name in optional.split(",") if name.strip()}
    failed = [name for name, r in results.items() if not r["ok"] and name not in tolerated]
    status = "unavailable" if failed else "ready"
    if process_stop.requested:  # stopping: no balancer should send anything new here
        failed, status = [*failed, "stopping"], "stopping"
    body = {"status": status, "failed": failed, "checks": results}
    return Response(
        body,
        status_code=HTTP_503_SERVICE_UNAVAILABLE if failed else HTTP_200_OK,
        headers={"cache-control": "no-store"},
    )


# Litestar appends "; charset=utf-8" to a text type itself: without this the header
# said charset twice, which strict scrapers and clients refuse.
_METRICS_TYPE = "; ".join(
    part for part in metrics.CONTENT_TYPE_LATEST.split("; ") if not part.startswith("charset=")
)


@get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics",
    sync_to_thread=True,
    media_type=_METRICS_TYPE,
)
def prometheus_metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = request.app.state
    settings = state.settings
    collectors = getattr(state, "ops_collectors", None)
    if collectors is None:
        collectors = [
            metrics.QueueDepthCollector(settings.redis.url, settings.redis.prefix),
            metrics.ProjectionLagCollector(settings.database.url),
        ]
        state.ops_collectors = collectors
    return Response(metrics.render(collectors), media_type=_METRICS_TYPE)


ops_router = Router(
    path="/",
    route_handlers=[healthz, readyz, prometheus_metrics],
    tags=["operations"],
    security=[],
)
