"""The login lockout is kept per address and account, with a looser budget per address
(accounts/throttling.py): a guesser cannot lock out the accounts of others who share its address
(a proxy, a NAT), forged X-Forwarded-For headers change nothing, and the admin's login, sign-up
and the token endpoint are limited the same way."""
import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(settings):
    settings.LOGIN_RATE, settings.LOGIN_ADDRESS_RATE = "3/min", "8/min"
    settings.TRUSTED_PROXIES = []
    make_user("alice")
    make_user("bob")


def login(client, username, password="wrong-guess", **extra):
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra).status_code


def test_a_guesser_locks_only_its_own_attempts_at_one_account(people):
    shared = Client(REMOTE_ADDR="10.0.0.5")  # e.g. every client of a misconfigured proxy
    assert [login(shared, "alice") for _ in range(4)] == [200, 200, 200, 429]
    # Bob, behind the same address, still logs in.
    assert login(Client(REMOTE_ADDR="10.0.0.5"), "bob", "correct-horse-42") == 302
    # Case does not buy a fresh budget.
    assert login(shared, "ALICE") == 429


def test_an_address_has_a_looser_budget_over_all_accounts(people):
    client = Client(REMOTE_ADDR="203.0.113.9")
    answers = [login(client, f"user{i}") for i in range(9)]
    assert answers == [200] * 8 + [429]


def test_forged_forwarded_for_headers_buy_no_guesses(people):
    client = Client(REMOTE_ADDR="203.0.113.9")
    answers = [login(client, "alice", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}") for i in range(4)]
    assert answers == [200, 200, 200, 429]


def test_behind_a_trusted_proxy_the_lockout_follows_the_real_client(people, settings):
    settings.TRUSTED_PROXIES = ["10.0.0.5"]
    proxy = Client(REMOTE_ADDR="10.0.0.5")
    assert [login(proxy, "alice", HTTP_X_FORWARDED_FOR="198.51.100.1") for _ in range(4)] == [200, 200, 200, 429]
    # Another client of the same proxy, at the same account: its own budget.
    assert login(proxy, "alice", "correct-horse-42", HTTP_X_FORWARDED_FOR="198.51.100.2") == 302


def test_the_token_endpoint_spends_the_same_budget(people):
    api = APIClient(REMOTE_ADDR="203.0.113.9")
    assert login(Client(REMOTE_ADDR="203.0.113.9"), "alice") == 200
    answers = [api.post("/api/v1/auth/token/", {"username": "alice", "password": "x"}, format="json").status_code
               for _ in range(3)]
    assert answers == [400, 400, 429]


def test_the_admin_login_is_throttled_like_the_site_login(people):
    client = Client(REMOTE_ADDR="203.0.113.9")
    answers = [client.post("/admin/login/", {"username": "alice", "password": "x"}) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert "Too many login attempts" in refused.content.decode() and 1 <= int(refused["Retry-After"]) <= 60
    # The admin's login and the site's share the budget.
    assert login(client, "alice") == 429
    assert client.get("/admin/login/").status_code == 200


def test_sign_ups_have_a_budget_per_address(settings):
    settings.SIGNUP_RATE = "2/hour"
    answers = []
    for i in range(3):
        answers.append(Client(REMOTE_ADDR="203.0.113.9").post("/accounts/signup/", {
            "username": f"new{i}", "email": f"new{i}@example.org", "team": "",
            "password1": "lantern-harbour-917", "password2": "lantern-harbour-917"}))
    assert [a.status_code for a in answers[:2]] == [302, 302], answers[0].content.decode()[:2000]
    assert answers[2].status_code == 429 and "Too many accounts" in answers[2].content.decode()
