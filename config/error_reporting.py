"""Optional error reporting to Sentry (or a compatible service), by configuration only: with
``SENTRY_DSN`` set and the ``sentry-sdk`` package installed, unhandled errors of the web and
worker processes are sent there (docs/operations.md#error-reporting). ExpBench does not
depend on the package; without it, or without the variable, nothing is sent.

What is sent is scrubbed like the logs (docs/architecture.md#hidden-gold): an exception's type
and its stack frames, never its message (a scorer's error could quote gold text), never the
local variables of a frame (they hold test sets), no request body, cookies or headers, no user
data (``send_default_pii`` off).
"""
import importlib
import importlib.util
import logging
from collections.abc import Mapping
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

# Imported only where installed: it is no requirement of ExpBench.
sentry_sdk: ModuleType | None = (importlib.import_module("sentry_sdk")
                                 if importlib.util.find_spec("sentry_sdk") is not None else None)

REQUEST_KEYS_KEPT = ("url", "method")


def scrub_event(event: dict[str, Any], hint: Any = None) -> dict[str, Any]:
    """``before_send``: keep what locates an error (types, frames, the URL), drop what could
    carry data (exception messages, frame variables, request bodies, headers, query strings)."""
    for exception in (event.get("exception") or {}).get("values") or []:
        exception["value"] = ""
        for frame in (exception.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)
    for thread in (event.get("threads") or {}).get("values") or []:
        for frame in (thread.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)
    if isinstance(event.get("request"), dict):
        event["request"] = {key: value for key, value in event["request"].items() if key in REQUEST_KEYS_KEPT}
        if isinstance(event["request"].get("url"), str):
            event["request"]["url"] = event["request"]["url"].split("?", 1)[0]
    event.pop("extra", None)
    event.pop("user", None)
    return event


def init_from_environment(environ: Mapping[str, str], release: str = "") -> str:
    """Start error reporting if configured: "off" (no SENTRY_DSN), "unavailable" (sentry-sdk
    not installed) or "on"."""
    dsn = environ.get("SENTRY_DSN", "").strip()
    if not dsn:
        return "off"
    if sentry_sdk is None:
        log.warning("SENTRY_DSN is set but the sentry-sdk package is not installed: errors are not reported "
                    "(pip install sentry-sdk to report them)")
        return "unavailable"
    sentry_sdk.init(
        dsn=dsn,
        environment=environ.get("SENTRY_ENVIRONMENT") or environ.get("EXPBENCH_ENV") or "development",
        release=release or None,
        send_default_pii=False,
        include_local_variables=False,
        max_request_body_size="never",
        traces_sample_rate=float(environ.get("SENTRY_TRACES_SAMPLE_RATE", "0") or 0),
        before_send=scrub_event,
    )
    return "on"
