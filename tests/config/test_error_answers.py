"""Requests Django refuses before any view runs get the API's problem details under /api/, and a
finished page elsewhere (config/errors.py)."""
import pytest
from django.test import Client

from tests.factories import make_task, make_user, token_for

pytestmark = pytest.mark.django_db


def too_many_fields(settings):
    return "&".join(f"f{i}=1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))


def test_too_many_fields_on_the_api_is_a_problem_400(settings):
    make_task("expmrc-squad")
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token_for(make_user())}")
    response = client.post("/api/v1/tasks/expmrc-squad/submissions/", too_many_fields(settings),
                           content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert response.json() == {"type": "about:blank", "title": "Bad Request", "status": 400,
                               "detail": f"More than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} form fields."}


def test_a_body_over_the_limit_on_the_old_path_keeps_the_old_error_member(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = Client(raise_request_exception=False).post("/api/auth/token/", "username=" + "x" * 2000,
                                                         content_type="application/x-www-form-urlencoded")
    body = response.json()
    assert response.status_code == 400 and "larger than 1,000 bytes" in body["detail"]
    assert body["error"] == body["detail"] and body["status"] == 400


def test_pages_get_a_finished_page(settings):
    response = Client(raise_request_exception=False).post("/accounts/login/", too_many_fields(settings),
                                                          content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    page = response.content.decode()
    assert "<h1>Bad request</h1>" in page and "ExpBench" in page
