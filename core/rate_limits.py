"""Fixed-window rate limits counted in the cache every process shares (``CACHE_URL``): one
counter per client and window, so a request costs one add and one increment whatever the
limit. (A sliding window keeps every request's time: DRF's own throttles rewrite that list on
each request, which at 100,000/min costs more than serving a stored board.) The price is that
a client may spend up to twice the limit across the edge of two windows.

Two things a process keeps to itself, each of which only ever refuses a request early, never
lets one more through:

* Under a high limit a process takes ``limit // RESERVE_SHARE`` requests from the shared
  counter at once and spends them locally. Every client's requests to one address count in one
  counter, which every process locks (``config.file_cache``) on every request: at 100,000/min
  that lock was a sixth of a stored API page's time. Requests another process reserved and did
  not use still count, so a client may be refused up to ``limit // RESERVE_SHARE`` requests per
  other process early (1.6 % of the limit). Limits under ``2 * RESERVE_SHARE`` are counted one
  request at a time, as before.
* A window found spent stays spent: a count only grows, so the rest of the window's requests
  are refused without touching the shared counter (a flood costs no lock and no write).
"""
import time

from django.core.cache.backends.base import BaseCache

from .recent import RecentlyUsed

PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600,
           "d": 86400, "day": 86400}


def parse_rate(rate: str, setting: str = "rate") -> tuple[int, int]:
    """("10/min") -> (10, 60)."""
    count, _, period = rate.partition("/")
    if not count.strip().isdigit() or period.strip() not in PERIODS:
        raise ValueError(f"{setting} must look like 10/min, got {rate!r}")
    return int(count), PERIODS[period.strip()]


#: Under a limit of at least twice this, a process reserves ``limit // RESERVE_SHARE`` requests at once.
RESERVE_SHARE = 64
#: Windows remembered per process; the oldest are dropped first (a dropped reservation is
#: refused early, a dropped spent window is looked up again).
MAX_REMEMBERED = 10_000
#: Per counter key: requests this process reserved and has not spent yet, or SPENT.
_reserved: RecentlyUsed[int] = RecentlyUsed(max_items=MAX_REMEMBERED)
SPENT = -1


def spend(cache: BaseCache, scope: str, client: str, limit: int, period: int) -> float | None:
    """Count one request of ``client`` in ``scope``; None while within ``limit`` per ``period``
    seconds, else the seconds until the current window ends."""
    now = time.time()
    key = f"rate:{scope}:{client}:{int(now // period)}"
    wait = period - (now % period)
    with _reserved.lock:  # read and spend at once: two threads never spend one reserved request
        left = _reserved.get(key) or 0
        if left == SPENT:
            return wait
        if left > 0:
            _reserved.put(key, left - 1)
            return None
    batch = max(1, limit // RESERVE_SHARE)
    try:
        spent = cache.incr(key, batch)  # the common case: the window's counter exists
    except ValueError:  # the first request of a window (or the counter expired), unless another process won
        spent = batch if cache.add(key, batch, timeout=period + 1) else cache.incr(key, batch)
    granted = min(batch, limit - (spent - batch))  # of the reserved requests, those within the limit
    _reserved.put(key, granted - 1 if granted > 0 else SPENT)
    return None if granted > 0 else wait


def forget_reservations() -> None:
    """Drop what this process keeps (tests: each starts with an empty cache)."""
    _reserved.clear()
