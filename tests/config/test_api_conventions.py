"""API conventions (docs/client.md): one error shape (RFC 9457 problem details) for DRF's errors,
the views' own and Django's; limit/offset pages and filters on lists; /api/v1/ with the old
unversioned paths as deprecated aliases that keep their old answers."""
import pytest
from django.test import Client
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from submissions.models import Status, Submission
from tests.factories import make_task, make_user, token_for, upload_file

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


@pytest.fixture
def alice():
    return make_user("alice")


@pytest.fixture
def api(alice):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(alice)}")
    return client


@pytest.fixture
def five_submissions(alice):
    """Five of alice's submissions on two tasks, in three states."""
    squad, race = make_task("expmrc-squad"), make_task("expmrc-race")
    rows = [(squad, Status.SCORED), (squad, Status.SCORED), (squad, Status.REJECTED), (race, Status.SCORED),
            (race, Status.QUEUED)]
    return [Submission.objects.create(user=alice, task=task, test_set=task.current_test_set(), method_name=f"m{i}",
                                      status=state) for i, (task, state) in enumerate(rows)]


def problem(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["status"] == status and {"type", "title", "detail"} <= set(body)
    return body


# --- lists: pages and filters -------------------------------------------------------------------
def test_lists_come_in_pages_that_link_to_the_next(api, five_submissions):
    first = api.get("/api/v1/submissions/", {"limit": 2}).json()
    assert first["count"] == 5 and len(first["results"]) == 2 and first["previous"] is None
    assert first["next"].endswith("/api/v1/submissions/?limit=2&offset=2")
    last = api.get("/api/v1/submissions/", {"limit": 2, "offset": 4}).json()
    assert last["next"] is None and len(last["results"]) == 1
    # Newest first, and the pages together are the whole list exactly once.
    ids = [row["id"] for offset in (0, 2, 4)
           for row in api.get("/api/v1/submissions/", {"limit": 2, "offset": offset}).json()["results"]]
    assert ids == sorted((s.pk for s in five_submissions), reverse=True)


def test_page_size_has_a_default_and_a_ceiling(api, five_submissions, settings):
    from config.pagination import ApiPagination

    assert len(api.get("/api/v1/submissions/").json()["results"]) == 5  # under the default size
    ceiling = ApiPagination.max_limit
    ApiPagination.max_limit = 3
    try:
        assert len(api.get("/api/v1/submissions/", {"limit": 1000}).json()["results"]) == 3
    finally:
        ApiPagination.max_limit = ceiling


@pytest.mark.parametrize("query, field", [({"limit": "0"}, "limit"), ({"limit": "many"}, "limit"),
                                          ({"offset": "-1"}, "offset"), ({"status": "done"}, "status"),
                                          ({"kind": "essay"}, "kind")])
def test_a_bad_list_parameter_is_a_400_naming_it(api, five_submissions, query, field):
    body = problem(api.get("/api/v1/submissions/", query), 400)
    assert body["type"] == "/api/v1/problems/validation-error/"
    assert [error["field"] for error in body["errors"]] == [field]


def test_submissions_filter_by_status_task_and_kind(api, five_submissions):
    def methods(**query):
        return sorted(row["method_name"] for row in api.get("/api/v1/submissions/", query).json()["results"])

    assert methods(status="scored") == ["m0", "m1", "m3"]
    assert methods(task="expmrc-race") == ["m3", "m4"]
    assert methods(task="expmrc-race", status="scored") == ["m3"]
    assert methods(kind="predictions") == ["m0", "m1", "m2", "m3", "m4"]
    assert methods(kind="code") == []
    assert methods(task="no-such-task") == []


def test_tasks_filter_by_kind_and_benchmark():
    make_task("expmrc-squad")
    make_task("expmrc-race")
    api = APIClient()
    assert [t["slug"] for t in api.get("/api/v1/tasks/", {"kind": "multichoice"}).json()["results"]] == ["expmrc-race"]
    assert api.get("/api/v1/tasks/", {"benchmark": "expmrc"}).json()["count"] == 2
    assert api.get("/api/v1/tasks/", {"benchmark": "other"}).json()["count"] == 0
    assert problem(api.get("/api/v1/tasks/", {"kind": "poetry"}), 400)["errors"][0]["field"] == "kind"


# --- the deprecated unversioned paths ----------------------------------------------------------
def test_old_paths_answer_as_before_and_say_they_are_deprecated(api, five_submissions):
    old = api.get("/api/submissions/", {"status": "scored"})
    assert old.status_code == 200
    assert isinstance(old.json(), list) and len(old.json()) == 3  # the whole list, as before pages
    assert old["Deprecation"].startswith("@")
    assert old["Link"] == '</api/v1/submissions/>; rel="successor-version"'
    assert "Deprecation" not in api.get("/api/v1/submissions/")
    # An explicit limit pages the old path too.
    assert api.get("/api/submissions/", {"limit": 1}).json()["count"] == 5


def test_old_paths_keep_the_error_member_beside_detail(api):
    make_task("expmrc-squad")
    old = problem(api.get("/api/tasks/expmrc-squad/skills/s9/inputs/"), 404)
    assert old["error"] == old["detail"] == "No built skill set 's9' for expmrc-squad."
    new = problem(api.get("/api/v1/tasks/expmrc-squad/skills/s9/inputs/"), 404)
    assert "error" not in new and new["detail"] == old["detail"]


def test_a_rejection_on_the_old_path_keeps_its_old_members(api):
    make_task("expmrc-squad")
    answer = api.post("/api/tasks/expmrc-squad/submissions/",
                      {"file": upload_file(b"not json"), "method_name": "m"}, format="multipart")
    old = problem(answer, 400)
    assert old["id"] == old["submission_id"] and old["error"] == old["detail"] and old["category"]
    new = problem(api.post("/api/v1/tasks/expmrc-squad/submissions/",
                           {"file": upload_file(b"not json"), "method_name": "m"}, format="multipart"), 400)
    assert "id" not in new and "error" not in new and new["submission_id"] == old["submission_id"] + 1


def test_writes_through_an_old_path_still_work(api, five_submissions):
    queued = five_submissions[-1]
    response = api.post(f"/api/submissions/{queued.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"


# --- errors from DRF, the views and Django ---------------------------------------------------
def test_an_unknown_token_is_a_401_problem_with_its_challenge():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    body = problem(client.get("/api/v1/tasks/"), 401)
    assert body["type"] == "about:blank" and body["title"] == "Unauthorized" and body["detail"] == "Invalid token."
    assert client.get("/api/v1/tasks/")["WWW-Authenticate"] == "Token"


def test_the_rate_limit_is_a_429_problem_with_retry_after(monkeypatch):
    monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, "anon", "2/min")
    client = APIClient(REMOTE_ADDR="203.0.113.9")
    assert [client.get("/api/v1/benchmarks/").status_code for _ in range(2)] == [200, 200]
    refused = client.get("/api/v1/benchmarks/")
    assert "throttled" in problem(refused, 429)["detail"]
    assert 1 <= int(refused["Retry-After"]) <= 60


def test_compare_names_the_bad_parameter():
    body = problem(APIClient().get("/api/v1/compare/", {"a": "x", "b": "1"}), 400)
    assert body["errors"] == [{"field": "a", "detail": "'x' is not a submission id"}]


def test_an_unknown_api_path_is_a_problem_and_an_unknown_page_is_a_page():
    body = problem(Client().get("/api/v1/no-such-thing/"), 404)
    assert "/api/v1/no-such-thing/" in body["detail"] and body["title"] == "Not Found"
    page = Client().get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_a_crash_under_the_api_is_a_500_problem_that_quotes_nothing(monkeypatch):
    import benchmark.api

    def crash(task, request):
        raise RuntimeError("gold answer: Denver Broncos")

    monkeypatch.setattr(benchmark.api, "skill_listing", crash)
    make_task("expmrc-squad")
    response = Client(raise_request_exception=False).get("/api/v1/tasks/expmrc-squad/skills/")
    body = problem(response, 500)
    assert body["type"] == "about:blank" and "Denver" not in response.content.decode()


def test_problem_types_describe_themselves():
    answer = Client().get("/api/v1/problems/quota-exceeded/")
    assert answer.status_code == 200 and answer.json()["title"] == "Daily submission quota reached"
    assert "Retry-After" in answer.json()["description"]
    problem(Client().get("/api/v1/problems/no-such-problem/"), 404)
