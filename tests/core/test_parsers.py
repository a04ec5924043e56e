"""JSON bodies nested too deep are refused with a 400 problem document (core/parsers.py), on
the API as on the anonymous token endpoint, instead of a RecursionError's 500."""
import json

import pytest
from rest_framework.test import APIClient

from core.parsers import nesting_depth
from tests.factories import api_for, make_task, make_user

pytestmark = pytest.mark.django_db

DEEP = "[" * 1000 + "]" * 1000


def test_depth_counts_brackets_outside_strings_only():
    assert nesting_depth(b'{"a": [1, {"b": "[[[[{{"}]}') == 3
    assert nesting_depth(b'"\\"[[["') == 0
    assert nesting_depth(b"[]") == 1 and nesting_depth(b"7") == 0
    assert nesting_depth(DEEP.encode(), stop_above=32) == 33


def test_a_body_nested_1000_deep_is_a_400_problem_on_the_token_endpoint():
    response = APIClient().post("/api/v1/auth/token/", DEEP, content_type="application/json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == 400 and "nested more than 32 levels" in body["detail"]


def test_a_deep_body_is_a_400_problem_on_an_authenticated_endpoint():
    api = api_for(make_user("alice"))
    make_task()
    nested = json.dumps({"method_name": json.loads("[" * 40 + "]" * 40)})
    response = api.post("/api/v1/tasks/expmrc-squad/submissions/", nested, content_type="application/json")
    assert response.status_code == 400 and "nested more than 32 levels" in response.json()["detail"]


def test_ordinary_json_still_parses(settings):
    make_user("alice")
    response = APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": "correct-horse-42"},
                                format="json")
    assert response.status_code == 200 and response.json()["token"]
    bad = APIClient().post("/api/v1/auth/token/", "{not json", content_type="application/json")
    assert bad.status_code == 400 and bad.json()["detail"].startswith("JSON parse error")
