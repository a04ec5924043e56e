"""One notion of the client's address (core/client_address.py): X-Forwarded-For is believed
only from TRUSTED_PROXIES, read from its right end; every rate limit counts by it."""
import pytest
from django.test import Client, RequestFactory

from core.client_address import client_address, client_key

pytestmark = pytest.mark.django_db


def address(settings, proxies, remote, forwarded=None):
    settings.TRUSTED_PROXIES = proxies
    meta = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return client_address(RequestFactory().get("/", **meta))


def test_without_trusted_proxies_the_header_is_ignored(settings):
    assert address(settings, [], "203.0.113.9", "1.2.3.4") == "203.0.113.9"


def test_behind_a_trusted_proxy_the_address_it_saw_counts(settings):
    assert address(settings, ["10.0.0.5"], "10.0.0.5", "198.51.100.7") == "198.51.100.7"
    # What the client wrote itself, left of what the proxy appended, is never believed.
    assert address(settings, ["10.0.0.5"], "10.0.0.5", "1.2.3.4, 198.51.100.7") == "198.51.100.7"
    # A chain of trusted proxies (networks too) is walked from the right.
    assert address(settings, ["10.0.0.0/8"], "10.0.0.5", "1.2.3.4, 198.51.100.7, 10.1.2.3") == "198.51.100.7"


def test_an_untrusted_peer_cannot_forward_anything(settings):
    assert address(settings, ["10.0.0.5"], "203.0.113.9", "10.0.0.5, 1.2.3.4") == "203.0.113.9"


def test_garbage_stops_the_walk_at_the_last_trusted_hop(settings):
    assert address(settings, ["10.0.0.5"], "10.0.0.5", "not-an-address") == "10.0.0.5"
    assert address(settings, ["10.0.0.5"], "10.0.0.5", "") == "10.0.0.5"
    assert address(settings, [], "", None) == "unknown"


def test_ipv6_clients_are_counted_by_their_64_and_mapped_ipv4_as_ipv4(settings):
    settings.TRUSTED_PROXIES = []
    factory = RequestFactory()
    assert client_key(factory.get("/", REMOTE_ADDR="2001:db8:1:2:aaaa::1")) == "2001:db8:1:2::/64"
    assert client_key(factory.get("/", REMOTE_ADDR="2001:db8:1:2:bbbb::9")) == "2001:db8:1:2::/64"
    assert client_key(factory.get("/", REMOTE_ADDR="::ffff:192.0.2.1")) == "192.0.2.1"


@pytest.fixture
def anon_limit(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"anon": "5/min", "user": "100/min"}}


def test_a_forged_forwarded_for_per_request_does_not_lift_the_api_limit(anon_limit, settings):
    settings.TRUSTED_PROXIES = []
    client = Client(REMOTE_ADDR="203.0.113.9")
    answers = [client.get("/api/v1/tasks/", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}") for i in range(8)]
    assert [a.status_code for a in answers] == [200] * 5 + [429] * 3


def test_behind_a_trusted_proxy_each_client_has_its_own_api_limit(anon_limit, settings):
    settings.TRUSTED_PROXIES = ["10.0.0.5"]
    proxy = Client(REMOTE_ADDR="10.0.0.5")
    first = [proxy.get("/api/v1/tasks/", HTTP_X_FORWARDED_FOR="198.51.100.1").status_code for _ in range(6)]
    assert first == [200] * 5 + [429]
    assert proxy.get("/api/v1/tasks/", HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 200
    # A client that prepends another address to its own header is still itself.
    assert proxy.get("/api/v1/tasks/", HTTP_X_FORWARDED_FOR="9.9.9.9, 198.51.100.1").status_code == 429
