"""Headers a security review expects (config/security_headers.py): a Content-Security-Policy
everywhere and no inline code for it to refuse, no-store on what shows a token, and read-only
CORS on the public API."""
import re
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.factories import logged_in, make_user

pytestmark = pytest.mark.django_db
TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_every_answer_carries_the_policy(settings):
    for path in ("/", "/accounts/login/", "/api/v1/tasks/", "/no-such-page/", "/api/v1/docs/"):
        policy = Client().get(path)["Content-Security-Policy"]
        assert policy == settings.CONTENT_SECURITY_POLICY
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy


def test_no_template_has_inline_script_style_or_handlers():
    inline = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=", re.IGNORECASE)
    found = [f"{path.relative_to(TEMPLATES)}: {match.group()}" for path in TEMPLATES.rglob("*.html")
             for match in inline.finditer(path.read_text())]
    assert found == []


def test_the_api_docs_page_loads_its_start_up_script_from_a_file():
    page = Client().get("/api/v1/docs/").content.decode()
    [script_url] = re.findall(r'<script src="([^"]*script=[^"]*)"', page)
    script = Client().get(script_url.replace("&amp;", "&"))
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()


def test_pages_and_answers_with_a_token_are_not_stored():
    alice = make_user("alice")
    page = logged_in(alice).get("/accounts/")
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    token = APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": "correct-horse-42"},
                             format="json")
    assert token.status_code == 200 and "no-store" in token["Cache-Control"]


def test_public_reads_are_open_to_other_origins_without_credentials():
    answer = Client().get("/api/v1/tasks/", HTTP_ORIGIN="https://elsewhere.example")
    assert answer["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in answer
    assert "ETag" in answer["Access-Control-Expose-Headers"]
    # Errors too, so a page on another origin can read why.
    assert Client().get("/api/v1/tasks/nope/")["Access-Control-Allow-Origin"] == "*"


def test_a_preflight_allows_reads_only_and_never_credentials_headers():
    read = Client().options("/api/v1/tasks/", HTTP_ORIGIN="https://elsewhere.example",
                            HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
                            HTTP_ACCESS_CONTROL_REQUEST_HEADERS="if-none-match")
    assert read.status_code == 204 and read["Access-Control-Allow-Origin"] == "*"
    assert read["Access-Control-Allow-Methods"] == "GET, HEAD, OPTIONS"
    assert "Authorization" not in read["Access-Control-Allow-Headers"]
    write = Client().options("/api/v1/tasks/x/submissions/", HTTP_ORIGIN="https://elsewhere.example",
                             HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert "Access-Control-Allow-Origin" not in write


def test_writes_and_pages_carry_no_cors_headers():
    make_user("alice")
    token = APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": "correct-horse-42"},
                             format="json", HTTP_ORIGIN="https://elsewhere.example")
    assert "Access-Control-Allow-Origin" not in token
    assert "Access-Control-Allow-Origin" not in Client().get("/", HTTP_ORIGIN="https://elsewhere.example")
