"""A task may require the URL of an upload's code or paper (submissions/intake.py): an upload
without it is refused with a problem document naming the field (API) or an error by the field
(web form), nothing is stored and no quota is spent; with it, the upload is taken."""
import pytest

from submissions.models import Submission
from tests.factories import api_for, fixture_gold, logged_in, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


@pytest.fixture
def task():
    task = make_task("expmrc-squad")
    task.requires_code_url = task.requires_paper_url = True
    task.save()
    return task


def upload(client, **declared):
    content = perfect_predictions(fixture_gold("expmrc-squad"))
    return client.post("/api/v1/tasks/expmrc-squad/submissions/",
                       {"file": upload_file(content), "method_name": "Linked", **declared}, format="multipart")


def test_an_upload_without_the_required_links_is_refused_naming_them(task):
    api = api_for(make_user("alice"))
    response = upload(api, code_url="https://code.example/linked")
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["type"].endswith("/problems/declaration-required/")
    assert [error["field"] for error in body["errors"]] == ["paper_url"]
    assert Submission.objects.count() == 0
    assert api.get("/api/v1/tasks/expmrc-squad/quota/").json()["used"] == 0
    blank = upload(api, code_url="  ", paper_url="")
    assert [error["field"] for error in blank.json()["errors"]] == ["code_url", "paper_url"]


def test_an_upload_with_them_is_taken_and_shows_them(task):
    response = upload(api_for(make_user("alice")), code_url="https://code.example/linked",
                      paper_url="https://paper.example/linked")
    assert response.status_code == 201, response.content
    assert response.json()["code_url"] == "https://code.example/linked"


def test_a_task_that_requires_nothing_takes_an_upload_without_links():
    make_task("expmrc-squad")
    assert upload(api_for(make_user("alice"))).status_code == 201


def test_the_form_marks_the_links_required_and_says_which_is_missing(task):
    client = logged_in(make_user("alice"))
    page = client.get("/tasks/expmrc-squad/submit/").content.decode()
    assert 'name="code_url"' in page and 'name="paper_url"' in page
    for name in ("code_url", "paper_url"):
        tag = page[page.index(f'name="{name}"'):]
        assert " required" in tag[:tag.index(">")], name
    content = perfect_predictions(fixture_gold("expmrc-squad"))
    response = client.post("/tasks/expmrc-squad/submit/", {"file": upload_file(content), "method_name": "Linked",
                                                           "code_url": "https://code.example/linked"})
    assert response.status_code == 400 and Submission.objects.count() == 0
    assert response.context["form"].errors["paper_url"]
