"""The embedded cache (config/file_cache.py) as the rate limits use it from several processes:
no count is lost when they count at once, one process starts a window, and a count keeps its
window's expiry."""
import multiprocessing
import pickle
import time

from config.file_cache import SharedFileCache
from core import rate_limits
from core.rate_limits import spend

PROCESSES, REQUESTS = 4, 150


def count_requests(folder, start):
    cache = SharedFileCache(str(folder), {})
    rate_limits.RESERVE_SHARE = 10 ** 7  # (this child's copy) one request per increment, as under a low limit
    start.wait()
    for _ in range(REQUESTS):
        spend(cache, "api-anon", "203.0.113.9", limit=10 ** 6, period=3600)


def test_processes_counting_at_once_lose_no_request(tmp_path):
    context = multiprocessing.get_context("fork")
    start = context.Event()
    workers = [context.Process(target=count_requests, args=(tmp_path, start)) for _ in range(PROCESSES)]
    for worker in workers:
        worker.start()
    start.set()  # all at once, including the window's first request
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    cache = SharedFileCache(str(tmp_path), {})
    key = f"rate:api-anon:203.0.113.9:{int(time.time() // 3600)}"
    assert cache.get(key) == PROCESSES * REQUESTS


def expiry_of(cache, key):
    with open(cache._key_to_file(key), "rb") as f:
        return pickle.load(f)


def test_a_count_keeps_its_expiry_and_an_expired_one_is_gone(tmp_path):
    cache = SharedFileCache(str(tmp_path), {})
    assert cache.add("window", 1, timeout=3600)
    expiry = expiry_of(cache, "window")
    assert expiry > time.time() + 3000
    assert [cache.incr("window") for _ in range(3)] == [2, 3, 4]
    assert expiry_of(cache, "window") == expiry  # Django's file cache sets the default 300 s again
    assert not cache.add("window", 1, timeout=3600) and cache.get("window") == 4

    assert cache.add("short", 5, timeout=1)
    time.sleep(1.1)
    try:
        cache.incr("short")
    except ValueError:
        pass
    else:
        raise AssertionError("an expired count was increased")
    assert cache.add("short", 1, timeout=60) and cache.incr("short") == 2
