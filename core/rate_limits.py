"""Fixed-window rate limits counted in the cache every process shares (``CACHE_URL``): one
counter per client and window, so a request costs one add and one increment whatever the
limit. (A sliding window keeps every request's time: DRF's own throttles rewrite that list on
each request, which at 100,000/min costs more than serving a stored board.) The price is that
a client may spend up to twice the limit across the edge of two windows."""
import time

from django.core.cache.backends.base import BaseCache

PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600,
           "d": 86400, "day": 86400}


def parse_rate(rate: str, setting: str = "rate") -> tuple[int, int]:
    """("10/min") -> (10, 60)."""
    count, _, period = rate.partition("/")
    if not count.strip().isdigit() or period.strip() not in PERIODS:
        raise ValueError(f"{setting} must look like 10/min, got {rate!r}")
    return int(count), PERIODS[period.strip()]


def spend(cache: BaseCache, scope: str, client: str, limit: int, period: int) -> float | None:
    """Count one request of ``client`` in ``scope``; None while within ``limit`` per ``period``
    seconds, else the seconds until the current window ends."""
    now = time.time()
    key = f"rate:{scope}:{client}:{int(now // period)}"
    try:
        spent = cache.incr(key)  # the common case: the window's counter exists
    except ValueError:  # the first request of a window (or the counter expired)
        spent = 1 if cache.add(key, 1, timeout=period + 1) else cache.incr(key)  # unless another process won
    return None if spent <= limit else period - (now % period)
