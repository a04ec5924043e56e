"""The API's rate limits (config/throttling.py, core/rate_limits.py): fixed windows in the shared
cache, one counter per client and window."""
import pytest
from django.core.cache import cache
from django.test import Client

from core.rate_limits import spend
from tests.factories import api_for, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def rates(settings):
    def set_rates(anon, user):
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"anon": anon, "user": user}}
    return set_rates


def test_an_address_gets_its_limit_then_429_with_retry_after(rates):
    rates("5/min", "100/min")
    client = Client()
    answers = [client.get("/api/v1/tasks/") for _ in range(8)]
    assert [a.status_code for a in answers] == [200] * 5 + [429] * 3
    assert all(1 <= int(a["Retry-After"]) <= 60 for a in answers[5:])
    assert answers[-1].json()["status"] == 429


def test_accounts_are_counted_on_their_own_not_by_address(rates):
    rates("2/min", "4/min")
    alice, bob = api_for(make_user("alice")), api_for(make_user("bob"))
    assert [alice.get("/api/v1/tasks/").status_code for _ in range(5)] == [200] * 4 + [429]
    assert bob.get("/api/v1/tasks/").status_code == 200  # same address, another account
    anonymous = Client()
    assert [anonymous.get("/api/v1/tasks/").status_code for _ in range(3)] == [200, 200, 429]


def test_a_request_costs_one_counter_whatever_the_limit(rates):
    # A sliding window keeps a time per request: at a high limit every request rewrites a long list.
    rates("100000/min", "100000/min")
    client = Client()
    for _ in range(300):
        assert client.get("/api/v1/tasks/").status_code == 200
    counters = [key for key in cache._cache if "rate:api-anon" in key]  # locmem's own store
    # One counter, written once: this process reserved 100,000 // 64 requests and spends them itself.
    assert len(counters) == 1 and cache.get(counters[0].split(":", 2)[-1]) == 100000 // 64


def test_a_window_ends_and_the_count_starts_again(monkeypatch):
    now = [1_000_000.0]
    monkeypatch.setattr("core.rate_limits.time.time", lambda: now[0])
    assert [spend(cache, "test", "client", 2, 60) for _ in range(3)][:2] == [None, None]
    assert spend(cache, "test", "client", 2, 60) == pytest.approx(60 - (1_000_000 % 60))
    now[0] += 60
    assert spend(cache, "test", "client", 2, 60) is None
