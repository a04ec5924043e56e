"""The OpenAPI schema validates with no warnings, and every operation types every answer it
documents, its errors as problem details (config/openapi.py)."""
import pytest
import yaml
from django.core.management import call_command
from django.test import Client

from tests.factories import make_task

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    path = tmp_path_factory.mktemp("schema") / "openapi.yaml"
    # --fail-on-warn turns any generator warning (an untyped field, a colliding name) into an error.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(path))
    return yaml.safe_load(path.read_text())


def operations(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", path, operation


def test_only_the_versioned_paths_are_described(schema):
    assert schema["paths"] and all(path.startswith("/api/v1/") for path in schema["paths"])


def test_every_answer_of_every_operation_has_a_schema(schema):
    for name, _, operation in operations(schema):
        for status, answer in operation["responses"].items():
            if status == "304":  # Not Modified has no body (RFC 9110, 15.4.5): its headers are what it says
                assert not answer.get("content") and {"ETag", "Last-Modified"} <= set(answer["headers"]), name
                continue
            assert answer.get("content"), f"{name} {status} is not typed"
            for media_type, body in answer["content"].items():
                assert body.get("schema"), f"{name} {status} {media_type} has no schema"
                if int(status) >= 400:
                    assert media_type == PROBLEM, f"{name} {status} is {media_type}"


def test_every_operation_documents_its_errors(schema):
    for name, path, operation in operations(schema):
        expected = {"401", "429"} | ({"404"} if "{" in path else set())
        if name.startswith(("POST", "PATCH")):
            expected |= {"400", "403"}
        assert expected <= set(operation["responses"]), f"{name}: {sorted(operation['responses'])}"


def test_the_problem_schema_and_the_quota_problem(schema):
    components = schema["components"]["schemas"]
    assert {"type", "title", "status", "detail"} <= set(components["Problem"]["required"])
    assert {"limit", "used", "remaining", "resets_at"} <= set(components["QuotaProblem"]["properties"])
    upload = schema["paths"]["/api/v1/tasks/{slug}/submissions/"]["post"]["responses"]
    assert upload["429"]["content"][PROBLEM]["schema"] == {"$ref": "#/components/schemas/QuotaProblem"}


# What a path parameter is filled with when the crawl below asks for the operation.
PATH_VALUES = {"/api/v1/benchmarks/{slug}/": "expmrc", "/api/v1/tasks/{slug}/": "expmrc-squad"}


@pytest.mark.django_db
def test_every_operation_that_answers_304_documents_it(schema):
    """Asked rather than listed: every GET the crawl can reach is asked again with the ETag it
    sent, and one that answers 304 must document the 304, its validators and If-None-Match."""
    make_task("expmrc-squad")
    conditional, undocumented = [], []
    for name, path, operation in operations(schema):
        prefix = next((p for p in PATH_VALUES if path.startswith(p)), None)
        url = path.replace("{slug}", PATH_VALUES[prefix]) if prefix else path
        if not name.startswith("GET ") or "{" in url:
            continue
        first = Client().get(url)
        if first.status_code != 200 or not first.has_header("ETag"):
            continue
        if Client().get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code != 304:
            continue
        conditional.append(name)
        responses = operation["responses"]
        asked = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
        if ("304" not in responses or {"If-None-Match", "If-Modified-Since"} - asked
                or any({"ETag", "Last-Modified"} - set(responses[status].get("headers", {}))
                       for status in ("200", "304"))):
            undocumented.append(name)
    # The crawl reached the conditional answers; each of them documents its 304.
    assert {"GET /api/v1/tasks/{slug}/inputs/", "GET /api/v1/tasks/{slug}/leaderboard/"} <= set(conditional)
    assert undocumented == []
