"""REST API: tokens, tasks, inputs, uploads (valid, invalid, quota), detail, leaderboard. Errors
are problem documents (config/errors.py); tests/config/test_api_conventions.py covers the shape
itself, pagination and the deprecated unversioned paths."""

import pytest
from rest_framework.test import APIClient

from expbench_client.client import encode_multipart, upload_fields
from submissions import intake
from submissions.models import ErrorCategory, Status, Submission
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, token_for, upload_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def task():
    return make_task("expmrc-squad")


@pytest.fixture
def alice():
    return make_user("alice", team="Lighthouse Lab")


@pytest.fixture
def client(alice):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(alice)}")
    return api


def submit(client, slug, content, **fields):
    data = {"file": upload_file(content), "method_name": "My system", **fields}
    return client.post(f"/api/v1/tasks/{slug}/submissions/", data, format="multipart")


def problem_of(response, status, problem_type="about:blank"):
    """The problem document of an error answer, checked for the members every one has."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["type"] == problem_type and body["title"] and body["detail"]
    assert "error" not in body  # the old member is only on the deprecated unversioned paths
    return body


def test_token_endpoint_returns_a_working_token(alice):
    api = APIClient()
    response = api.post("/api/v1/auth/token/", {"username": "alice", "password": "correct-horse-42"}, format="json")
    assert response.status_code == 200
    api.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert api.get("/api/v1/submissions/").status_code == 200
    bad = APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert bad.status_code == 400


def test_task_list_has_the_documented_fields(task):
    response = APIClient().get("/api/v1/tasks/")
    assert response.status_code == 200
    [row] = response.json()["results"]
    assert row["slug"] == "expmrc-squad"
    assert row["benchmark"] == "expmrc" and row["kind"] == "span" and row["language"] == "en"
    assert [m["key"] for m in row["metrics"]] == ["answer_f1", "evidence_f1", "overall_f1"]
    assert row["test_set"]["n_items"] == 3


def test_inputs_have_questions_but_no_answers_or_evidence(task):
    response = APIClient().get("/api/v1/tasks/expmrc-squad/inputs/")
    assert response.status_code == 200
    body = response.json()
    qas = [qa for article in body["data"] for p in article["paragraphs"] for qa in p["qas"]]
    assert [qa["id"] for qa in qas] == ["fx-squad-1", "fx-squad-2", "fx-squad-3"]
    assert all(set(qa) == {"id", "question"} for qa in qas)
    assert "answers" not in response.content.decode() and "evidences" not in response.content.decode()


def test_multichoice_inputs_keep_options_and_drop_answers():
    make_task("expmrc-race")
    body = APIClient().get("/api/v1/tasks/expmrc-race/inputs/").json()
    assert all(set(p) == {"id", "article", "questions", "options"} for p in body["data"])


def test_upload_requires_authentication(task):
    response = APIClient().post(
        "/api/v1/tasks/expmrc-squad/submissions/", {"file": upload_file({}), "method_name": "x"}, format="multipart"
    )
    assert response.status_code == 401
    assert Submission.objects.count() == 0


def test_valid_upload_is_queued_and_scored_by_the_task(client, task, django_capture_on_commit_callbacks):
    gold = fixture_gold("expmrc-squad")
    with django_capture_on_commit_callbacks() as callbacks:
        response = submit(client, "expmrc-squad", perfect_predictions(gold), public="true")
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "queued" and response.json()["method_name"] == "My system"
    assert len(callbacks) == 1  # the scoring message is sent only after commit
    submission_id = response.json()["id"]
    assert response["Location"] == f"/api/v1/submissions/{submission_id}/"
    score_submission(submission_id)  # what the worker does
    detail = client.get(f"/api/v1/submissions/{submission_id}/").json()
    assert detail["status"] == "scored" and detail["error"] is None
    assert detail["scores"] == {"answer_f1": 100.0, "evidence_f1": 100.0, "overall_f1": 100.0}
    assert set(detail["ci"]) == {"answer_f1", "evidence_f1", "overall_f1"}
    assert "item_scores" not in detail


def test_partial_file_scores_missing_questions_as_zero(client, task):
    gold = fixture_gold("expmrc-squad")
    predictions = perfect_predictions(gold)
    del predictions["fx-squad-3"]
    response = submit(client, "expmrc-squad", predictions)
    score_submission(response.json()["id"])
    detail = client.get(f"/api/v1/submissions/{response.json()['id']}/").json()
    assert detail["unanswered"] == 1 and detail["total"] == 3
    assert detail["scores"]["overall_f1"] == pytest.approx(200 / 3)


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"\xff\xfe{", "UTF-8"),
        (b'{"fx-squad-1": {"answer": "x", "evidence": "y"},}', "line 1"),
        (b"[]", "object"),
        ({"fx-squad-1": {"answer": "x"}}, "evidence"),
        ({"fx-squad-1": {"answer": 3, "evidence": "y"}}, "answer"),
        ({"no-such-id": {"answer": "x", "evidence": "y"}}, "no-such-id"),
        (b'{"fx-squad-1": {"answer": "a", "evidence": "b"}, "fx-squad-1": {"answer": "a", "evidence": "b"}}',
         "fx-squad-1"),
        # json.loads fails on these with a plain ValueError / RecursionError, not JSONDecodeError
        (b'{"fx-squad-1": {"answer": ' + b"9" * 5000 + b', "evidence": "y"}}', "more than 4300 digits"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_invalid_files_get_a_400_with_a_precise_message(client, task, content, expected):
    response = submit(client, "expmrc-squad", content)
    body = problem_of(response, 400, "/api/v1/problems/submission-rejected/")
    assert body["category"] == "invalid_input"
    assert expected in body["detail"]
    stored = Submission.objects.get(pk=body["submission_id"])
    assert stored.status == Status.REJECTED and stored.error_message == body["detail"]


def test_multichoice_lowercase_letter_is_refused_with_allowed_letters(client):
    make_task("expmrc-race")
    response = submit(client, "expmrc-race", {"fx-r-01-0": {"answer": "a", "evidence": "x"}})
    detail = problem_of(response, 400, "/api/v1/problems/submission-rejected/")["detail"]
    assert "fx-r-01-0" in detail and "A" in detail


def test_oversized_file_is_refused_without_parsing(client, task, settings):
    settings.SUBMISSION_MAX_BYTES = 100
    response = submit(client, "expmrc-squad", b'{"fx-squad-1": {"answer": "' + b"x" * 200 + b'", "evidence": ""}}')
    assert "limit" in problem_of(response, 400, "/api/v1/problems/submission-rejected/")["detail"]


def test_missing_fields_are_field_errors_not_500(client, task):
    response = client.post("/api/v1/tasks/expmrc-squad/submissions/", {"method_name": "x"}, format="multipart")
    body = problem_of(response, 400, "/api/v1/problems/validation-error/")
    assert body["errors"] == [{"field": "file", "detail": "No file was submitted."}]
    assert body["detail"] == "file: No file was submitted."
    response = client.post("/api/v1/tasks/expmrc-squad/submissions/", {"file": upload_file({})}, format="multipart")
    assert [e["field"] for e in problem_of(response, 400, "/api/v1/problems/validation-error/")["errors"]] == [
        "method_name"]
    response = client.post("/api/v1/tasks/expmrc-squad/submissions/", "not multipart", content_type="text/plain")
    assert "text/plain" in problem_of(response, 415)["detail"]
    missing = client.post("/api/v1/tasks/no-such-task/submissions/", {}, format="multipart")
    assert problem_of(missing, 404)["title"] == "Not Found"


def test_daily_quota_counts_accepted_files_only(client, task, alice, settings):
    settings.SUBMISSIONS_PER_DAY = 2
    assert submit(client, "expmrc-squad", {}).status_code == 201
    assert submit(client, "expmrc-squad", b"not json").status_code == 400  # rejected: free
    platform_failure = Submission.objects.create(
        user=alice, task=task, test_set=task.current_test_set(), method_name="x",
        status=Status.FAILED, error_category=ErrorCategory.WORKER_LOST,
    )
    assert submit(client, "expmrc-squad", {}).status_code == 201
    assert client.get("/api/v1/tasks/expmrc-squad/quota/").json()["remaining"] == 0
    third = submit(client, "expmrc-squad", {})
    body = problem_of(third, 429, "/api/v1/problems/quota-exceeded/")
    assert "2 submissions per day" in body["detail"]
    assert (body["limit"], body["used"], body["remaining"]) == (2, 2, 0)
    # Retry-After: the seconds until the UTC day ends (at most a day, at least one second)
    assert 1 <= int(third["Retry-After"]) <= 86400
    assert body["resets_at"].endswith("T00:00:00Z")
    assert intake.quota_status(alice, task)["remaining"] == 0
    assert platform_failure.status == Status.FAILED


def test_quota_endpoint_counts_what_the_quota_counts(client, task, settings):
    settings.SUBMISSIONS_PER_DAY = 3
    assert client.get("/api/v1/tasks/expmrc-squad/quota/").json() == {
        "task": "expmrc-squad", "limit": 3, "used": 0, "remaining": 3,
        "resets_at": intake.utc_day_bounds()[1].strftime("%Y-%m-%dT%H:%M:%SZ")}
    assert submit(client, "expmrc-squad", {}).status_code == 201
    assert submit(client, "expmrc-squad", b"not json").status_code == 400  # rejected: not counted
    quota = client.get("/api/v1/tasks/expmrc-squad/quota/").json()
    assert (quota["used"], quota["remaining"]) == (1, 2)
    assert APIClient().get("/api/v1/tasks/expmrc-squad/quota/").status_code == 401
    assert client.get("/api/v1/tasks/no-such-task/quota/").status_code == 404


def test_quota_is_per_user_and_per_task(client, task, settings):
    settings.SUBMISSIONS_PER_DAY = 1
    make_task("expmrc-race")
    assert submit(client, "expmrc-squad", {}).status_code == 201
    assert submit(client, "expmrc-race", {}).status_code == 201
    bob = APIClient()
    bob.credentials(HTTP_AUTHORIZATION=f"Token {token_for(make_user('bob'))}")
    assert submit(bob, "expmrc-squad", {}).status_code == 201


def test_submission_detail_visibility(client, task, alice):
    private = submit(client, "expmrc-squad", {}, public="false").json()["id"]
    score_submission(private)
    assert client.get(f"/api/v1/submissions/{private}/").status_code == 200
    assert APIClient().get(f"/api/v1/submissions/{private}/").status_code == 404
    public = submit(client, "expmrc-squad", {}, public="true").json()["id"]
    assert APIClient().get(f"/api/v1/submissions/{public}/").status_code == 404  # not scored yet
    score_submission(public)
    assert APIClient().get(f"/api/v1/submissions/{public}/").status_code == 200


def test_list_shows_only_own_submissions(client, task):
    submit(client, "expmrc-squad", {})
    bob = APIClient()
    bob.credentials(HTTP_AUTHORIZATION=f"Token {token_for(make_user('bob'))}")
    assert bob.get("/api/v1/submissions/").json()["results"] == []
    assert client.get("/api/v1/submissions/").json()["count"] == 1


def test_cancel_and_toggle_public(client, task):
    sid = submit(client, "expmrc-squad", {}).json()["id"]
    response = client.patch(f"/api/v1/submissions/{sid}/", {"public": False}, format="json")
    assert response.status_code == 200 and response.json()["public"] is False
    assert client.post(f"/api/v1/submissions/{sid}/cancel/").json()["status"] == "cancelled"
    again = client.post(f"/api/v1/submissions/{sid}/cancel/")
    assert "Only queued submissions" in problem_of(again, 409, "/api/v1/problems/conflict/")["detail"]
    assert score_submission(sid) == "skipped"
    bob = APIClient()
    bob.credentials(HTTP_AUTHORIZATION=f"Token {token_for(make_user('bob'))}")
    assert bob.patch(f"/api/v1/submissions/{sid}/", {"public": True}, format="json").status_code == 404


def test_leaderboard_ranks_by_overall_with_reported_rows(client, task, alice):
    from benchmark.models import ReportedResult

    ReportedResult.objects.create(task=task, kind="human", method="Human Performance",
                                  scores={"answer_f1": 91.3, "evidence_f1": 92.9, "overall_f1": 84.7}, source="paper")
    ReportedResult.objects.create(task=task, kind="baseline", method="Baseline",
                                  scores={"answer_f1": 80.0, "evidence_f1": 60.0, "overall_f1": 50.0}, source="paper")
    gold = fixture_gold("expmrc-squad")
    perfect = submit(client, "expmrc-squad", perfect_predictions(gold), method_name="Perfect", public="true").json()["id"]
    empty = submit(client, "expmrc-squad", {}, method_name="Empty", public="true").json()["id"]
    hidden = submit(client, "expmrc-squad", perfect_predictions(gold), method_name="Hidden", public="false").json()["id"]
    for sid in (perfect, empty, hidden):
        score_submission(sid)
    rows = APIClient().get("/api/v1/tasks/expmrc-squad/leaderboard/").json()["results"]
    assert [(r["rank"], r["method"], r["reported"]) for r in rows] == [
        (None, "Human Performance", True),
        (1, "My system" if False else "Perfect", False),
        (2, "Baseline", True),
        (3, "Empty", False),
    ]
    assert rows[1]["team"] == "Lighthouse Lab"
    # Three right answers out of three: the Wilson interval, not [100, 100] (docs/diagnostics.md).
    assert rows[1]["ci"]["overall_f1"] == pytest.approx([43.850, 100.0], abs=1e-3)
    assert rows[2]["ci"] is None


def test_schema_and_docs_are_served():
    schema = APIClient().get("/api/v1/schema/")
    assert schema.status_code == 200 and b"/api/v1/tasks/{slug}/submissions/" in schema.content
    assert b"\n  /api/tasks/" not in schema.content  # the deprecated aliases are not described
    docs = APIClient().get("/api/v1/docs/")
    assert docs.status_code == 200
    assert b"cdn" not in docs.content.lower()


@pytest.mark.parametrize("default_public", [False, True])
@pytest.mark.parametrize("public, empty", [(None, False), (None, True), (True, False), (False, False)])
def test_an_upload_without_public_follows_the_uploaders_default(task, default_public, public, empty):
    """The exact body the expbench client sends (expbench_client.client.upload_fields): no
    `public` unless --public/--private was given, then the account's setting decides. An empty
    value (a hand-written form) counts as absent."""
    user = make_user("carol", default_public=default_public)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    fields = upload_fields(method_name="CLI system", public=public)
    if empty:
        fields["public"] = ""
    content = perfect_predictions(fixture_gold("expmrc-squad"))
    body, content_type = encode_multipart(fields, {"file": ("p.json", upload_file(content).read())})
    response = api.generic("POST", "/api/v1/tasks/expmrc-squad/submissions/", body, content_type=content_type)
    assert response.status_code == 201, response.content
    expected = default_public if public is None else public
    assert response.json()["public"] is expected
    assert Submission.objects.get(pk=response.json()["id"]).public is expected
