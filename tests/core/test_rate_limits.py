"""What a process keeps of the shared rate-limit counters (core/rate_limits.py): reservations
under high limits and spent windows. Several processes are simulated by giving each its own
reservations over one shared cache; each may only ever refuse early, never pass more."""
import random

import pytest
from django.core.cache import cache

from core import rate_limits
from core.rate_limits import RESERVE_SHARE, spend
from core.recent import RecentlyUsed


@pytest.fixture
def clock(monkeypatch):
    now = [60 * 16_667 + 20.0]  # 20 s into a minute window
    monkeypatch.setattr("core.rate_limits.time.time", lambda: now[0])
    return now


def as_process(monkeypatch, kept):
    monkeypatch.setattr(rate_limits, "_reserved", kept)


@pytest.mark.parametrize("limit", [5, 127, 640, 100_000])
def test_processes_sharing_a_counter_never_pass_more_than_the_limit(monkeypatch, clock, limit):
    processes = [RecentlyUsed(max_items=100) for _ in range(4)]
    rng = random.Random(limit)
    passed = 0
    refused_early = None
    for request in range(limit + 50):
        as_process(monkeypatch, rng.choice(processes))
        if spend(cache, "t", "client", limit, 60) is None:
            passed += 1
        elif refused_early is None:
            refused_early = request  # the first refusal
    batch = max(1, limit // RESERVE_SHARE)
    assert passed <= limit
    # Unspent reservations of the other processes are all that is refused early.
    assert refused_early >= limit - (len(processes) - 1) * (batch - 1)
    assert passed >= limit - (len(processes) - 1) * (batch - 1)


def test_limits_under_twice_the_share_are_counted_one_request_at_a_time(clock):
    limit = 2 * RESERVE_SHARE - 1
    for _ in range(10):
        assert spend(cache, "t", "client", limit, 60) is None
    assert cache.get(f"rate:t:client:{int(clock[0] // 60)}") == 10


def test_a_spent_window_is_refused_without_touching_the_counter(monkeypatch, clock):
    for _ in range(3):
        spend(cache, "t", "client", 3, 60)
    assert spend(cache, "t", "client", 3, 60) == pytest.approx(40)
    calls = []
    monkeypatch.setattr(cache, "incr", lambda *args, **kwargs: calls.append(args))
    assert spend(cache, "t", "client", 3, 60) == pytest.approx(40)
    assert calls == []
    clock[0] += 60  # the next window: counted again
    monkeypatch.undo()
    assert spend(cache, "t", "client", 3, 60) is None


def test_what_a_process_keeps_is_bounded(monkeypatch, clock):
    monkeypatch.setattr(rate_limits, "_reserved", RecentlyUsed(max_items=50))
    for client in range(200):
        spend(cache, "t", f"client-{client}", 10_000, 60)
    assert len(rate_limits._reserved) == 50
    # A dropped reservation is taken again from the counter, never spent twice.
    assert spend(cache, "t", "client-0", 10_000, 60) is None
    assert cache.get(f"rate:t:client-0:{int(clock[0] // 60)}") == 2 * (10_000 // RESERVE_SHARE)
