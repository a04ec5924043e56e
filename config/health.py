"""``/healthz``: can this process reach the database, the Celery broker and the cache?

200 ``{"status": "ok", "checks": {"database": "ok", "broker": "ok", "cache": "ok"}}`` when all
answer; 503 with ``"status": "failing"``, ``"failing": [names]`` and, for each failing part,
the exception's type (never its message, which can hold a URL with a password).

Answered by a middleware placed before Django's host check and HTTPS redirect: a load
balancer or ``docker compose`` asks over plain HTTP with whatever Host header it has.
"""
import logging
import os
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from kombu import Connection

log = logging.getLogger(__name__)

PATH = "/healthz"
BROKER_TIMEOUT_SECONDS = 3.0


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        if cursor.fetchone() != (1,):
            raise RuntimeError("SELECT 1 did not answer 1")


def check_broker() -> None:
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        # The embedded broker is a folder: reachable means it is there and writable.
        folder = settings.CELERY_BROKER_DIR
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise NotADirectoryError("the broker folder is missing or not writable")
        return
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=BROKER_TIMEOUT_SECONDS,
                    transport_options=getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {})) as broker:
        broker.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT_SECONDS)


def check_cache() -> None:
    key, value = f"healthz:{uuid.uuid4().hex}", uuid.uuid4().hex
    cache.set(key, value, timeout=30)
    try:
        if cache.get(key) != value:
            raise LookupError("a value written to the cache could not be read back")
    finally:
        cache.delete(key)


CHECKS: dict[str, Callable[[], None]] = {"database": check_database, "broker": check_broker, "cache": check_cache}


def health() -> tuple[int, dict]:
    checks, failing = {}, []
    for name, check in CHECKS.items():
        started = time.monotonic()
        try:
            check()
        except Exception as exc:
            log.warning("healthz: %s failed with %s", name, type(exc).__name__)
            checks[name] = f"failed: {type(exc).__name__}"
            failing.append(name)
        else:
            checks[name] = "ok"
        log.debug("healthz: %s took %.1f ms", name, (time.monotonic() - started) * 1000)
    if failing:
        return 503, {"status": "failing", "failing": failing, "checks": checks}
    return 200, {"status": "ok", "checks": checks}


class HealthCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.rstrip("/") != PATH:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            response = JsonResponse({"detail": "GET or HEAD only"}, status=405)
            response["Allow"] = "GET, HEAD"
            return response
        status, body = health()
        response = JsonResponse(body, status=status)
        response["Cache-Control"] = "no-store"
        return response
