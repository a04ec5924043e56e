"""The OpenAPI schema validates with no warnings, and every operation types every answer it
documents, its errors as problem details (config/openapi.py)."""
import pytest
import yaml
from django.core.management import call_command

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
