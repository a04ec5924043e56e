"""Password guessing is limited per client address (accounts/throttling.py): the web login and
the API token endpoint spend one shared budget, and the answer says when to retry."""
import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.throttling import parse_rate
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(settings):
    settings.LOGIN_RATE = "5/min"
    return make_user("alice")


def test_the_token_endpoint_answers_429_with_retry_after_once_the_budget_is_spent(alice):
    api = APIClient()
    answers = [api.post("/api/auth/token/", {"username": "alice", "password": f"guess-{i}"}, format="json")
               for i in range(8)]
    assert [a.status_code for a in answers] == [400] * 5 + [429] * 3
    assert 1 <= int(answers[-1]["Retry-After"]) <= 60
    # Even the right password waits for the next window: a guesser cannot tell it apart.
    right = api.post("/api/auth/token/", {"username": "alice", "password": "correct-horse-42"}, format="json")
    assert right.status_code == 429


def test_the_web_login_shares_the_budget_and_says_when_to_retry(alice):
    api = APIClient()
    for i in range(3):
        assert api.post("/api/auth/token/", {"username": "alice", "password": f"x{i}"}, format="json").status_code == 400
    web = Client()
    assert web.post("/accounts/login/", {"username": "alice", "password": "nope"}).status_code == 200  # 4th
    assert web.post("/accounts/login/", {"username": "alice", "password": "nope"}).status_code == 200  # 5th
    refused = web.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert refused.status_code == 429 and "Too many login attempts" in refused.content.decode()
    assert 1 <= int(refused["Retry-After"]) <= 60
    # Another address has its own budget.
    other = Client(REMOTE_ADDR="10.0.0.2")
    assert other.post("/accounts/login/", {"username": "alice", "password": "nope"}).status_code == 200


def test_rates_are_parsed_strictly():
    assert parse_rate("10/min") == (10, 60) and parse_rate("3/h") == (3, 3600)
    with pytest.raises(ValueError):
        parse_rate("ten per minute")
