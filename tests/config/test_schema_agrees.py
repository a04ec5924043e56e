"""The schema and the behaviour agree (config/known_params.py, config/pagination.py): the limits
the server enforces are in the schema, a query parameter the schema does not declare is refused
with a problem document on /api/v1/ (the deprecated /api/ paths keep ignoring it), and lists and
boards come in one paging envelope, under ``results`` (``rows`` on the deprecated board path)."""
import pytest
import yaml
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from submissions.models import Status, Submission
from tests.factories import make_task, make_user, token_for

PROBLEM = "application/problem+json"
ENVELOPE = {"count", "next", "previous", "results"}


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    path = tmp_path_factory.mktemp("schema") / "openapi.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(path))
    return yaml.safe_load(path.read_text())


def query_parameters(operation):
    return {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "query"}


def test_every_paged_operation_states_the_bounds_it_enforces(schema):
    paged = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            params = query_parameters(operation)
            if "limit" in params:
                paged.append(f"{method} {path}")
                assert params["limit"]["schema"]["minimum"] == 1, path
                assert params["offset"]["schema"]["minimum"] == 0, path
    assert {"get /api/v1/tasks/", "get /api/v1/submissions/", "get /api/v1/tasks/{slug}/leaderboard/"} <= set(paged)


def test_names_are_declared_non_blank(schema):
    components = schema["components"]["schemas"]
    for name, field in [("SubmissionCreate", "method_name"), ("PatchedSubmissionUpdate", "method_name"),
                        ("TeamName", "name")]:
        declared = components[name]["properties"][field]
        assert declared["minLength"] == 1 and declared["pattern"] == r"\S", (name, declared)


def test_the_board_and_the_lists_share_one_envelope(schema):
    components = schema["components"]["schemas"]
    assert ENVELOPE <= set(components["Leaderboard"]["properties"]) and "rows" not in components["Leaderboard"][
        "properties"]
    assert ENVELOPE <= set(components["PaginatedTaskList"]["properties"])


@pytest.mark.django_db
@pytest.mark.parametrize(("limit", "offset"), [("0", "0"), ("1", "-1")])
def test_what_the_schema_forbids_the_server_refuses(limit, offset):
    make_task("expmrc-squad")
    for path in ("/api/v1/tasks/", "/api/v1/tasks/expmrc-squad/leaderboard/"):
        response = Client().get(path, {"limit": limit, "offset": offset})
        assert response.status_code == 400 and response["Content-Type"] == PROBLEM, path
        assert {e["field"] for e in response.json()["errors"]} == {"limit" if limit == "0" else "offset"}


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["", "   "])
def test_a_blank_name_is_refused_as_the_schema_says(name):
    user = make_user("alice")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    response = client.post("/api/v1/teams/", {"name": name}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "name"
    task = make_task("expmrc-squad")
    entry = Submission.objects.create(user=user, task=task, test_set=task.current_test_set(), method_name="kept",
                                      status=Status.SCORED)
    response = client.patch(f"/api/v1/submissions/{entry.pk}/", {"method_name": name}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "method_name"
    entry.refresh_from_db()
    assert entry.method_name == "kept"


# Path parameters filled in for the crawl; an operation whose path has others is asked as is.
FILLED = {"{slug}": "expmrc-squad", "{id}": "1", "{pk}": "1"}


@pytest.mark.django_db
def test_every_operation_refuses_a_parameter_it_does_not_declare(schema):
    """Asked of every operation the schema describes, reads and writes alike: the refusal comes
    before anything else (authentication, the object's existence), and names the parameter."""
    make_task("expmrc-squad")
    asked = 0
    for template, methods in schema["paths"].items():
        path = template
        for placeholder, value in FILLED.items():
            path = path.replace(placeholder, value)
        for method in methods:
            response = getattr(Client(), method)(f"{path}?ordering=-score")
            assert response.status_code == 400, (method, template, response.status_code)
            body = response.json()
            assert response["Content-Type"] == PROBLEM and body["errors"][0]["field"] == "ordering", body
            asked += 1
    assert asked >= 25


@pytest.mark.django_db
def test_the_parameters_an_operation_declares_are_taken(schema):
    make_task("expmrc-squad")
    assert Client().get("/api/v1/tasks/", {"kind": "span", "benchmark": "expmrc", "limit": 5, "offset": 0,
                                           "format": "json"}).status_code == 200
    board = Client().get("/api/v1/tasks/expmrc-squad/leaderboard/", {"sort": "system", "order": "asc", "limit": 2})
    assert board.status_code == 200
    # HEAD is a GET without the body: it takes the same parameters.
    assert Client().head("/api/v1/tasks/", {"kind": "span"}).status_code == 200
    assert Client().head("/api/v1/tasks/", {"sorting": "x"}).status_code == 400


@pytest.mark.django_db
def test_the_deprecated_paths_keep_ignoring_unknown_parameters():
    make_task("expmrc-squad")
    assert Client().get("/api/tasks/?ordering=-name").status_code == 200
    assert Client().get("/api/tasks/expmrc-squad/leaderboard/?ordering=-name").status_code == 200


@pytest.mark.django_db
def test_boards_page_in_the_envelope_of_lists_and_the_old_path_keeps_rows():
    task = make_task("expmrc-squad")
    user = make_user("alice")
    for n in range(3):
        Submission.objects.create(user=user, task=task, test_set=task.current_test_set(), method_name=f"m{n}",
                                  status=Status.SCORED, public=True, scores={"overall_f1": 50.0 + n})
    board = Client().get("/api/v1/tasks/expmrc-squad/leaderboard/?limit=2").json()
    tasks = Client().get("/api/v1/tasks/?limit=1").json()
    assert ENVELOPE <= set(board) and ENVELOPE <= set(tasks) and "rows" not in board
    rows = board["results"]
    assert len(rows) == 2 and board["next"].endswith("offset=2")
    rows += Client().get(board["next"]).json()["results"]
    old = Client().get("/api/tasks/expmrc-squad/leaderboard/").json()
    assert "results" not in old and [row["method"] for row in old["rows"]] == [row["method"] for row in rows]


@pytest.mark.django_db
def test_the_average_board_answers_in_the_envelope_and_the_old_path_keeps_rows():
    task = make_task("expmrc-squad")
    user = make_user("alice")
    Submission.objects.create(user=user, task=task, test_set=task.current_test_set(), method_name="m",
                              status=Status.SCORED, public=True, scores={"overall_f1": 50.0})
    board = Client().get("/api/v1/benchmarks/expmrc/leaderboard/")
    old = Client().get("/api/benchmarks/expmrc/leaderboard/")
    body, old_body = board.json(), old.json()
    assert ENVELOPE <= set(body) and "rows" not in body and body["next"] is None and body["previous"] is None
    assert set(old_body) == {"tasks", "rows"} and body["results"] == old_body["rows"]
    assert body["count"] == len(body["results"]) and body["tasks"] == old_body["tasks"]
    assert board["ETag"] != old["ETag"]  # two representations, two validators
