"""Server-rendered pages through the Django test client: home, leaderboards and their exports,
the upload form, status pages, my submissions, owner actions, accounts, and local assets only."""
import csv
import html
import io
import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token

from benchmark.models import ReportedResult
from submissions import intake
from submissions.models import Status, Submission
from submissions.tasks import compute_diagnostics, score_submission
from tests.factories import fixture_gold, logged_in, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db


# --------------------------------------------------------------------------- helpers


def text_of(fragment):
    """Visible text of an HTML fragment, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def table_rows(page, table_id):
    """[(tr class, [cell texts])] of the table with ``table_id``."""
    body = page.content.decode() if hasattr(page, "content") else page
    match = re.search(rf'<table[^>]*id="{table_id}"[^>]*>(.*?)</table>', body, re.S)
    assert match, f"no table #{table_id}"
    rows = []
    for attrs, inner in re.findall(r"<tr([^>]*)>(.*?)</tr>", match.group(1), re.S):
        cls = re.search(r'class="([^"]*)"', attrs)
        cells = [text_of(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", inner, re.S)]
        rows.append((cls.group(1) if cls else "", cells))
    return rows


def page_text(response):
    return html.unescape(response.content.decode())


def submit(user, task, predictions, method_name="My system", public=True):
    return intake.submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions),
                                       method_name=method_name, public=public)


def scored(user, task, predictions, method_name, public=True):
    submission = submit(user, task, predictions, method_name, public)
    assert submission.status == Status.QUEUED, submission.error_message
    score_submission(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Status.SCORED
    return submission


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def _fast(settings):
    settings.BOOTSTRAP_RESAMPLES = 200
    settings.SUBMISSIONS_PER_DAY = 5


@pytest.fixture
def squad():
    task = make_task("expmrc-squad")
    ReportedResult.objects.create(task=task, kind="human", method="Human Performance", team="ExpMRC authors",
                                  scores={"answer_f1": 90.8, "evidence_f1": 92.1, "overall_f1": 83.6},
                                  source="paper", url="https://github.com/ymcui/expmrc")
    ReportedResult.objects.create(task=task, kind="baseline", method="BERT-base + Most Similar Sent.",
                                  team="ExpMRC authors (baseline)",
                                  scores={"answer_f1": 87.4, "evidence_f1": 81.8, "overall_f1": 50.0}, source="paper")
    return task


@pytest.fixture
def alice():
    return make_user("alice", team="Lighthouse Lab")


@pytest.fixture
def bob():
    return make_user("bob", team="Bob Co")


@pytest.fixture
def partial_predictions():
    """All answers right, the third evidence missing: answer 100, evidence/overall 66.667,
    so the bootstrap CI is not degenerate."""
    predictions = perfect_predictions(fixture_gold("expmrc-squad"))
    predictions["fx-squad-3"]["evidence"] = ""
    return predictions


@pytest.fixture
def board(squad, alice, bob, partial_predictions):
    """A leaderboard with a human row, a baseline, alice's public entry and bob's private one."""
    entry = scored(alice, squad, partial_predictions, "Lantern QA")
    secret = scored(bob, squad, perfect_predictions(fixture_gold("expmrc-squad")), "Secret Sauce", public=False)
    return {"task": squad, "entry": entry, "secret": secret}


# --------------------------------------------------------------------------- home and leaderboards


def test_home_lists_benchmarks_and_tasks(board):
    make_task("expmrc-race")
    response = Client().get("/")
    assert response.status_code == 200
    text = page_text(response)
    assert "ExpMRC" in text
    assert 'href="/tasks/expmrc-squad/"' in text and 'href="/tasks/expmrc-race/"' in text
    row = re.search(r"<tr>\s*<td><a href=\"/tasks/expmrc-squad/\">.*?</tr>", response.content.decode(), re.S)
    cells = [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)]
    assert cells == ["SQuAD", "Span extraction", "en", "1", "Lantern QA (Lighthouse Lab)", "66.667", "83.600"]
    assert "Secret Sauce" not in text


def test_home_without_benchmarks_explains_how_to_load_them():
    response = Client().get("/")
    assert response.status_code == 200 and "load_demo" in page_text(response)


def test_leaderboard_page_ranks_and_marks_rows(board):
    entry = board["entry"]
    response = Client().get("/tasks/expmrc-squad/")
    assert response.status_code == 200
    rows = table_rows(response, "leaderboard")
    header = rows[0][1]
    assert header[:5] == ["Rank", "System", "Answer F1", "Evidence F1", "Overall F1"]
    body = rows[1:]
    assert [cls.split()[0] for cls, _ in body] == ["pinned", "scored", "reported"]

    human_cls, human = body[0]
    assert human[0] == "—" and human[1].startswith("Human Performance reported human")
    assert human[2:5] == ["90.800", "92.100", "83.600"]

    _, mine = body[1]
    assert mine[0] == "1" and mine[1].startswith("Lantern QA") and "Lighthouse Lab" in mine[1]
    assert "reported" not in mine[1]
    for cell, key in zip(mine[2:5], ["answer_f1", "evidence_f1", "overall_f1"], strict=True):
        low, high = entry.ci[key]
        assert cell == f"{entry.scores[key]:.3f} ±{(high - low) / 2:.2f}"
    assert mine[4].startswith("66.667 ±") and mine[4] != "66.667 ±0.00"
    low, high = entry.ci["overall_f1"]
    assert mine[5] == f"{low:.2f}–{high:.2f}"

    _, baseline = body[2]
    assert baseline[0] == "2" and "reported" in baseline[1] and baseline[4] == "50.000"
    assert "reported, no per-item data" in baseline[5]

    text = page_text(response)
    assert "Secret Sauce" not in text
    assert f'href="/submissions/{entry.pk}/"' in text
    assert f'href="/submissions/{board["secret"].pk}/"' not in text
    assert "/tasks/expmrc-squad/leaderboard.csv" in text and "/tasks/expmrc-squad/inputs.json" in text


def test_user_text_is_escaped_on_pages(squad, alice):
    entry = scored(alice, squad, {}, '<script>alert("x")</script>')
    for url in ("/", "/tasks/expmrc-squad/", f"/submissions/{entry.pk}/"):
        body = Client().get(url).content.decode()
        assert "<script>alert" not in body, url
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body, url


def test_multichoice_leaderboard_says_answer_acc():
    make_task("expmrc-race")
    response = Client().get("/tasks/expmrc-race/")
    header = table_rows(response, "leaderboard")[0][1]
    assert header[2:5] == ["Answer Acc", "Evidence F1", "Overall F1"]
    assert "Answer F1" not in page_text(response)


def test_unknown_task_is_404():
    assert Client().get("/tasks/no-such-task/").status_code == 404
    assert Client().get("/tasks/no-such-task/leaderboard.csv").status_code == 404
    assert Client().get("/tasks/no-such-task/inputs.json").status_code == 404


def test_csv_export(board):
    entry = board["entry"]
    response = Client().get("/tasks/expmrc-squad/leaderboard.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))  # after the BOM
    assert [(r["rank"], r["method"], r["reported"], r["kind"]) for r in rows] == [
        ("", "Human Performance", "True", "human"),
        ("1", "Lantern QA", "False", "submission"),
        ("2", "BERT-base + Most Similar Sent.", "True", "baseline"),
    ]
    mine = rows[1]
    assert mine["team"] == "Lighthouse Lab"
    assert mine["overall_f1"] == f"{entry.scores['overall_f1']:.3f}" == "66.667"
    assert mine["overall_f1_ci_low"] == f"{entry.ci['overall_f1'][0]:.3f}"
    assert mine["overall_f1_ci_high"] == f"{entry.ci['overall_f1'][1]:.3f}"
    assert rows[0]["overall_f1_ci_low"] == "" and rows[0]["answer_f1"] == "90.800"
    assert "Secret Sauce" not in response.content.decode()


def test_inputs_download(squad):
    response = Client().get("/tasks/expmrc-squad/inputs.json")
    assert response.status_code == 200
    assert 'attachment; filename="expmrc-squad-v1-inputs.json"' == response["Content-Disposition"]
    # The stored file, streamed as a static file is (through the server's file wrapper), its length known ahead.
    assert response.streaming and int(response["Content-Length"]) == len(content := response.getvalue())
    body = json.loads(content)
    qas = [qa for article in body["data"] for p in article["paragraphs"] for qa in p["qas"]]
    assert [qa["id"] for qa in qas] == ["fx-squad-1", "fx-squad-2", "fx-squad-3"]
    assert all(set(qa) == {"id", "question"} for qa in qas)


# --------------------------------------------------------------------------- upload form


def test_submit_page_requires_login(squad):
    response = Client().get("/tasks/expmrc-squad/submit/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/tasks/expmrc-squad/submit/"
    response = Client().post("/tasks/expmrc-squad/submit/", {"method_name": "x", "file": upload_file({})})
    assert response.status_code == 302 and Submission.objects.count() == 0


def test_submit_page_shows_the_quota(squad, alice):
    client = logged_in(alice)
    response = client.get("/tasks/expmrc-squad/submit/")
    assert response.status_code == 200
    assert re.search(r"<strong>5</strong> of 5 submissions left today", response.content.decode())
    submit(alice, squad, {})
    response = client.get("/tasks/expmrc-squad/submit/")
    assert re.search(r"<strong>4</strong> of 5 submissions left today", response.content.decode())
    assert logged_in(alice).get("/tasks/no-such-task/submit/").status_code == 404


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"\xff\xfe{}", "prediction file is not UTF-8: invalid byte 0xff at line 1 (byte offset 0)"),
        (b'{"fx-squad-1": {"answer": "x", "evidence": "y"},\n}', "not valid JSON:"),
        (b"", "prediction file is empty"),
        (b"[]", "top level must be a JSON object"),
        ({"fx-squad-1": {"answer": "x"}}, 'invalid entries: line 1: "fx-squad-1": field "evidence" is missing'),
        ({"nope": {"answer": "x", "evidence": "y"}}, 'keys not in the test set: line 1: "nope"'),
    ],
    ids=["not-utf8", "trailing-comma", "empty", "array", "missing-evidence", "unknown-key"],
)
def test_invalid_upload_rerenders_the_form_with_the_precise_error(squad, alice, content, expected):
    response = logged_in(alice).post("/tasks/expmrc-squad/submit/",
                                     {"method_name": "Broken", "file": upload_file(content), "public": "on"})
    assert response.status_code == 400
    text = page_text(response)
    assert expected in text
    assert 'class="field-error"' in response.content.decode()
    assert '<form method="post" enctype="multipart/form-data"' in response.content.decode()
    rejected = Submission.objects.get()
    assert rejected.status == Status.REJECTED and rejected.error_category == "invalid_input"
    assert expected in rejected.error_message
    assert intake.quota_status(alice, squad)["remaining"] == 5  # rejected files are free


def test_oversized_upload_is_refused_in_the_form(squad, alice, settings):
    settings.SUBMISSION_MAX_BYTES = 50
    response = logged_in(alice).post("/tasks/expmrc-squad/submit/", {
        "method_name": "Big", "file": upload_file(b'{"fx-squad-1": {"answer": "' + b"x" * 100 + b'", "evidence": ""}}')})
    assert response.status_code == 400
    assert "the limit is 50 bytes" in page_text(response)


def test_form_errors_and_refusals_are_400_not_500(squad, alice, settings):
    client = logged_in(alice)
    missing_file = client.post("/tasks/expmrc-squad/submit/", {"method_name": "x"})
    assert missing_file.status_code == 400 and "This field is required." in page_text(missing_file)
    missing_name = client.post("/tasks/expmrc-squad/submit/", {"file": upload_file({})})
    assert missing_name.status_code == 400
    bad_url = client.post("/tasks/expmrc-squad/submit/", {"file": upload_file({}), "method_name": "x", "url": "not a url"})
    assert bad_url.status_code == 400
    assert Submission.objects.count() == 0

    settings.SUBMISSIONS_PER_DAY = 1
    assert client.post("/tasks/expmrc-squad/submit/", {"file": upload_file({}), "method_name": "a"}).status_code == 302
    over = client.post("/tasks/expmrc-squad/submit/", {"file": upload_file({}), "method_name": "b"})
    assert over.status_code == 400 and "Daily limit reached: 1 submissions per day" in page_text(over)

    squad.accepts_submissions = False
    squad.save()
    closed = client.post("/tasks/expmrc-squad/submit/", {"file": upload_file({}), "method_name": "c"})
    assert closed.status_code == 400 and "does not accept submissions" in page_text(closed)
    assert Submission.objects.count() == 1


def test_task_without_test_set_refuses_uploads_politely(alice):
    from benchmark.importers import ensure_expmrc_benchmark
    from benchmark.models import Task

    Task.objects.create(benchmark=ensure_expmrc_benchmark(), slug="empty-task", name="Empty", kind="span")
    client = logged_in(alice)
    assert client.get("/tasks/empty-task/").status_code == 200
    response = client.post("/tasks/empty-task/submit/", {"file": upload_file({}), "method_name": "x"})
    assert response.status_code == 400 and "has no test set yet" in page_text(response)
    assert client.get("/tasks/empty-task/inputs.json").status_code == 404


def test_valid_upload_redirects_to_the_status_page(squad, alice):
    response = logged_in(alice).post("/tasks/expmrc-squad/submit/", {
        "method_name": "Lantern QA", "description": "two towers", "url": "https://example.org/paper",
        "file": upload_file(perfect_predictions(fixture_gold("expmrc-squad")), name="preds.json")})
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.pk}/"
    assert submission.status == Status.QUEUED and submission.user == alice
    assert submission.original_filename == "preds.json" and submission.public is False  # checkbox not sent
    assert submission.url == "https://example.org/paper" and submission.test_set.version == "v1"


# --------------------------------------------------------------------------- status page


def test_status_page_refreshes_until_scored(squad, alice):
    client = logged_in(alice)
    submission = submit(alice, squad, perfect_predictions(fixture_gold("expmrc-squad")), "Lantern QA")
    queued = client.get(f"/submissions/{submission.pk}/")
    assert queued.status_code == 200
    assert 'data-refresh="2"' in queued.content.decode()  # static/js/live-refresh.js updates it
    assert 'id="status">Queued<' in queued.content.decode()

    score_submission(submission.pk)
    scored = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert 'data-refresh="' in scored and "Diagnostics are being computed" in scored
    compute_diagnostics(submission.pk)  # the page stops refreshing once diagnostics are in too
    done = client.get(f"/submissions/{submission.pk}/")
    assert done.status_code == 200
    assert 'data-refresh="' not in done.content.decode()
    assert 'id="status">Scored<' in done.content.decode()
    rows = table_rows(done, "scores")
    assert [cells[:2] for _, cells in rows[1:]] == [
        ["Answer F1", "100.000"], ["Evidence F1", "100.000"], ["Overall F1", "100.000"]]


def test_status_page_of_a_rejected_file_shows_the_error_and_stops_refreshing(squad, alice):
    rejected = submit(alice, squad, {"nope": {"answer": "x", "evidence": "y"}})
    assert rejected.status == Status.REJECTED
    response = logged_in(alice).get(f"/submissions/{rejected.pk}/")
    assert response.status_code == 200
    assert 'data-refresh="' not in response.content.decode()
    assert 'keys not in the test set: line 1: "nope"' in page_text(response)
    assert "/tasks/expmrc-squad/submit/" in page_text(response)


def test_private_and_unscored_submissions_are_404_for_others(board, alice, bob):
    secret = board["secret"]
    assert logged_in(bob).get(f"/submissions/{secret.pk}/").status_code == 200
    assert logged_in(alice).get(f"/submissions/{secret.pk}/").status_code == 404
    assert Client().get(f"/submissions/{secret.pk}/").status_code == 404
    queued = submit(bob, board["task"], {}, "Not yet")
    assert logged_in(alice).get(f"/submissions/{queued.pk}/").status_code == 404
    # A public scored entry is readable by anyone, without the owner's controls.
    public = Client().get(f"/submissions/{board['entry'].pk}/")
    assert public.status_code == 200 and "Lantern QA" in page_text(public)
    assert "submission-toggle-public" not in public.content.decode() and "/public/" not in public.content.decode()
    assert Client().get("/submissions/999999/").status_code == 404


def test_my_submissions_lists_only_mine(board, alice, bob):
    response = logged_in(alice).get("/submissions/")
    assert response.status_code == 200
    methods = [cells[4] for _, cells in table_rows(response, "my-submissions")[1:]]
    assert methods == ["Lantern QA"]
    response = logged_in(bob).get("/submissions/")
    assert [cells[4] for _, cells in table_rows(response, "my-submissions")[1:]] == ["Secret Sauce"]
    assert Client().get("/submissions/").status_code == 302


def test_cancel_needs_the_owner_and_post(squad, alice, bob):
    submission = submit(alice, squad, {}, "To cancel")
    url = f"/submissions/{submission.pk}/cancel/"
    assert logged_in(alice).get(url).status_code == 405
    assert Client().post(url).status_code == 302  # to the login page
    assert logged_in(bob).post(url).status_code == 404
    submission.refresh_from_db()
    assert submission.status == Status.QUEUED

    response = logged_in(alice).post(url, follow=True)
    assert response.status_code == 200 and "Submission cancelled." in page_text(response)
    submission.refresh_from_db()
    assert submission.status == Status.CANCELLED
    assert score_submission(submission.pk) == "skipped"
    again = logged_in(alice).post(url, follow=True)
    assert "Only queued submissions can be cancelled" in page_text(again)


def test_toggle_public_needs_the_owner(board, alice, bob):
    entry = board["entry"]
    url = f"/submissions/{entry.pk}/public/"
    assert logged_in(bob).post(url).status_code == 404
    assert logged_in(alice).get(url).status_code == 405
    response = logged_in(alice).post(url)
    assert response.status_code == 302 and response["Location"] == f"/submissions/{entry.pk}/"
    entry.refresh_from_db()
    assert entry.public is False
    assert "Lantern QA" not in page_text(Client().get("/tasks/expmrc-squad/"))
    assert Client().get(f"/submissions/{entry.pk}/").status_code == 404
    logged_in(alice).post(url)
    entry.refresh_from_db()
    assert entry.public is True
    assert "Lantern QA" in page_text(Client().get("/tasks/expmrc-squad/"))


def test_owner_actions_need_a_csrf_token(squad, alice):
    submission = submit(alice, squad, {}, "x")
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(f"/submissions/{submission.pk}/cancel/").status_code == 403
    assert client.post(f"/submissions/{submission.pk}/public/").status_code == 403
    submission.refresh_from_db()
    assert submission.status == Status.QUEUED and submission.public


# --------------------------------------------------------------------------- accounts


SIGNUP = {"username": "carol", "email": "carol@example.org", "team": "Carol Lab",
          "password1": "a-Long-passphrase-91", "password2": "a-Long-passphrase-91"}


def test_signup_creates_user_and_team_and_logs_in():
    client = Client()
    assert client.get("/accounts/signup/").status_code == 200
    response = client.post("/accounts/signup/", SIGNUP)
    assert response.status_code == 302 and response["Location"] == "/"
    user = User.objects.get(username="carol")
    assert user.profile.team == "Carol Lab" and user.email == "carol@example.org"
    assert client.get("/accounts/").status_code == 200  # logged in
    assert client.get("/accounts/signup/").status_code == 302  # already signed up


def test_signup_errors_rerender_with_400():
    response = Client().post("/accounts/signup/", {**SIGNUP, "password2": "something else"})
    assert response.status_code == 400 and not User.objects.filter(username="carol").exists()
    assert 'class="field-error"' in response.content.decode()


def test_signup_does_not_follow_an_offsite_next():
    response = Client().post("/accounts/signup/?next=https://evil.example/x", SIGNUP)
    assert response.status_code == 302 and response["Location"] == "/"
    response = Client().post("/accounts/signup/?next=//evil.example/x", {**SIGNUP, "username": "dave"})
    assert response.status_code == 302 and response["Location"] == "/"
    response = Client().post("/accounts/signup/?next=/submissions/", {**SIGNUP, "username": "erin"})
    assert response.status_code == 302 and response["Location"] == "/submissions/"


def test_login_and_logout(alice):
    client = Client()
    bad = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert bad.status_code == 200 and "Wrong username or password." in page_text(bad)
    response = client.post("/accounts/login/", {"username": "alice", "password": "correct-horse-42"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/accounts/").status_code == 200
    assert client.get("/accounts/logout/").status_code == 405  # logging out is a POST
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert client.get("/accounts/").status_code == 302


def test_login_does_not_follow_an_offsite_next(alice):
    response = Client().post("/accounts/login/?next=https://evil.example/",
                             {"username": "alice", "password": "correct-horse-42", "next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"] == "/"


def test_account_page_shows_and_regenerates_the_token(alice):
    client = logged_in(alice)
    response = client.get("/accounts/")
    assert response.status_code == 200 and "You have no API token yet." in page_text(response)
    assert client.get("/accounts/token/").status_code == 405
    client.post("/accounts/token/")
    first = Token.objects.get(user=alice).key
    assert f'<pre id="api-token">{first}</pre>' in client.get("/accounts/").content.decode()
    client.post("/accounts/token/")
    second = Token.objects.get(user=alice).key
    assert second != first and Token.objects.filter(key=first).count() == 0
    page = client.get("/accounts/").content.decode()
    assert second in page and first not in page
    assert Client().get("/accounts/").status_code == 302


# --------------------------------------------------------------------------- assets


def asset_urls(body):
    """src/href of every <script> and <link> tag."""
    urls = []
    for tag in re.findall(r"<(?:script|link)\b[^>]*>", body, re.I):
        urls += re.findall(r'\b(?:src|href)\s*=\s*["\']?([^"\'\s>]+)', tag, re.I)
    return urls


def test_pages_link_only_local_static_assets(board, alice):
    client = logged_in(alice)
    pages = ["/", "/tasks/expmrc-squad/", "/tasks/expmrc-squad/submit/", f"/submissions/{board['entry'].pk}/",
             "/submissions/", "/accounts/", "/api/docs/"]
    seen = set()
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        urls = asset_urls(response.content.decode())
        assert urls, url
        for asset in urls:
            assert asset.startswith("/") and not asset.startswith("//"), (url, asset)
            assert not re.match(r"(?i)https?:", asset), (url, asset)
        seen.update(urls)
    assert "/static/css/expbench.css" in seen
    for asset in seen:  # and every one of them is actually served
        assert client.get(asset).status_code == 200, asset


def test_leaderboard_title_and_cue_section(db):
    from benchmark import cues
    from benchmark.models import TestSet

    task = make_task("expmrc-race")
    page = Client().get("/tasks/expmrc-race/").content.decode()
    assert re.search(r"<title>\s*ExpMRC · RACE\+ · ExpBench\s*</title>", page)
    # the import queued cue discovery: the section says so and the page refreshes until it is there
    assert 'id="cue-status"' in page and "Cue discovery is queued" in page
    assert 'data-refresh="3"' in page
    cues.discover(TestSet.objects.get(pk=task.current_test_set().pk))
    page = Client().get("/tasks/expmrc-race/").content.decode()
    assert page.count('id="cues"') == 1 and "no public reference split" in page
    assert 'id="cue-status"' not in page and 'data-refresh="' not in page
    # Found from the hidden answers themselves: no row of it is shown, nor whether any was found
    # (tests/benchmark/test_public_cue_table.py checks a table with rows).
    assert 'id="cue-table"' not in page and "No feature reaches the minimum counts" not in page
