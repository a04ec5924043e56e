"""Hidden means hidden (docs/diagnostics.md#hidden-splits-what-is-never-shown): with the four fixture tasks imported as hidden test sets and
submissions in every state, no API response, page, error message or log line carries a gold
answer or evidence, and per-question results never leave the server.

Gold strings come from the fixture gold files. The public-inputs downloads legitimately contain
the passages (and so every answer span), so they are checked structurally instead.
"""
import html
import json
import logging
import re

import pytest
from django.test import Client
from django.urls import NoReverseMatch, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient
from rest_framework.views import APIView

from benchmark import skill_sets
from benchmark.models import SkillVariant
from scoring.metrics import expmrc
from submissions.models import ErrorCategory, Status, Submission
from submissions.tasks import compute_diagnostics, score_submission
from tests.factories import (
    FIXTURE_TASKS,
    fixture_gold,
    gold_answers_and_evidence,
    make_task,
    make_user,
    perfect_predictions,
    token_for,
    upload_file,
)

pytestmark = pytest.mark.django_db

SLUGS = sorted(FIXTURE_TASKS)
HIDDEN_KEYS = {"answers", "evidences", "answer_start", "gold", "item_scores"}


def all_gold_texts():
    texts = set()
    for slug in SLUGS:
        texts.update(gold_answers_and_evidence(fixture_gold(slug)))
    assert len(texts) > 20 and all(texts)
    return sorted(texts)


GOLD = all_gold_texts()


def _pattern(needle):
    """Match ``needle`` as a whole: a short ASCII answer such as "1874" must not be found inside
    a random hex digest or a float like 53.18749, but a leak inside CJK text still matches."""
    left = r"(?<![0-9A-Za-z.])" if needle[0].isascii() and needle[0].isalnum() else ""
    right = r"(?![0-9A-Za-z])" if needle[-1].isascii() and needle[-1].isalnum() else ""
    return re.compile(left + re.escape(needle) + right)


GOLD_PATTERNS = [(text, _pattern(text)) for text in GOLD]


def readings(body):
    """The forms a leak could take in a response: raw, HTML-unescaped, and JSON-decoded."""
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    forms = [text, html.unescape(text)]
    try:
        forms.append(json.dumps(json.loads(text), ensure_ascii=False))
    except ValueError:
        pass
    return forms


def gold_found(body):
    return sorted({gold for form in readings(body) for gold, pattern in GOLD_PATTERNS if pattern.search(form)})


def keys_anywhere(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from keys_anywhere(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys_anywhere(item)


def test_the_gold_matcher_finds_leaks_and_ignores_digests():
    assert gold_found('{"answer": "1874"}') == ["1874"]
    assert "1874" not in gold_found("ci 53.18749 sha 0a1874ff")
    assert gold_found("<p>Ottoline Brask</p>") == ["Ottoline Brask"]
    assert "通知小王" in gold_found(json.dumps({"x": "我会通知小王带上报告"}))  # inside CJK text
    assert gold_found("<td>an electric &#108;antern</td>") == ["an electric lantern"]  # HTML-escaped
    assert gold_found('"\\u901a\\u77e5\\u5c0f\\u738b"') == ["通知小王"]  # JSON-escaped


# --------------------------------------------------------------------------- the world


@pytest.fixture
def world(settings, monkeypatch, caplog):
    settings.BOOTSTRAP_RESAMPLES = 50
    settings.SUBMISSIONS_PER_DAY = 50
    caplog.set_level(logging.DEBUG)
    # The crawl sends hundreds of requests; a 429 would hide what an endpoint returns.
    monkeypatch.setattr(APIView, "get_throttles", lambda self: [])
    tasks = {slug: make_task(slug) for slug in SLUGS}
    for task in tasks.values():
        assert task.current_test_set().is_hidden
    alice, bob = make_user("alice", team="Lighthouse Lab"), make_user("bob", team="Bob Co")
    alice_api, bob_api = APIClient(), APIClient()
    alice_api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(alice)}")
    bob_api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(bob)}")
    responses = []  # every response that must be free of gold text, as (label, body)

    def upload(api, slug, content, **fields):
        response = api.post(f"/api/tasks/{slug}/submissions/",
                            {"file": upload_file(content), "method_name": "System", **fields}, format="multipart")
        responses.append((f"POST upload {slug}", response.content))
        return response

    scored = []
    for slug in SLUGS:
        gold = fixture_gold(slug)
        # The predictions quote the gold exactly: the uploaded file must never be echoed either.
        response = upload(alice_api, slug, perfect_predictions(gold), method_name=f"Perfect {slug}")
        assert response.status_code == 201, response.content
        scored.append(response.json()["id"])
        private = upload(bob_api, slug, perfect_predictions(gold), method_name=f"Private {slug}", public="false")
        scored.append(private.json()["id"])
    for submission_id in scored:
        assert score_submission(submission_id) == Status.SCORED

    # Rejected at upload: the file holds gold text, the message must not repeat it.
    squad_gold = perfect_predictions(fixture_gold("expmrc-squad"))
    race_gold = perfect_predictions(fixture_gold("expmrc-race"))
    rejected = [
        upload(alice_api, "expmrc-squad", {"fx-squad-3": {"answer": squad_gold["fx-squad-3"]["answer"]}}),
        upload(alice_api, "expmrc-race", {"fx-r-01-1": {"answer": "b", "evidence": race_gold["fx-r-01-1"]["evidence"]}}),
        upload(alice_api, "expmrc-squad", {**squad_gold, "extra-key": {"answer": "x", "evidence": "y"}}),
        upload(alice_api, "expmrc-squad", {"fx-squad-1": {"answer": squad_gold["fx-squad-1"]["answer"],
                                                          "evidence": ["Ottoline Brask"]}}),
    ]
    assert all(r.status_code == 400 for r in rejected), [r.content for r in rejected]
    rejected_ids = [r.json()["id"] for r in rejected]

    # Failed: the scorer crashes with a message that quotes gold text.
    leak = fixture_gold("expmrc-squad")["data"][0]["paragraphs"][0]["qas"][2]["evidences"][0]

    def crash(gold, predictions):
        raise RuntimeError(f"mismatch on {leak!r} vs {gold['data'][0]['paragraphs'][0]['qas'][0]['answers'][0]['text']}")

    failed = upload(alice_api, "expmrc-squad", squad_gold, method_name="Crashes")
    failed_id = failed.json()["id"]
    with monkeypatch.context() as patch:
        patch.setattr(expmrc, "score_predictions", crash)
        score_submission(failed_id)
    failed_sub = Submission.objects.get(pk=failed_id)
    assert failed_sub.status == Status.FAILED and failed_sub.error_category == ErrorCategory.SCORER_ERROR

    # Diagnostics and skill sets: aggregates of the hidden set must not carry gold either.
    for submission_id in scored:
        compute_diagnostics(submission_id)
    squad_set = tasks["expmrc-squad"].current_test_set()
    skill_sets.build(squad_set)
    skill_file = {"original": squad_gold}
    for variant in SkillVariant.objects.filter(test_set=squad_set, status="ok"):
        skill_file[variant.skill] = perfect_predictions(variant.gold)
    skills_sub = alice_api.post("/api/tasks/expmrc-squad/submissions/",
                                {"file": upload_file(skill_file), "method_name": "Skills", "kind": "skills"},
                                format="multipart")
    responses.append(("POST skills upload", skills_sub.content))
    assert skills_sub.status_code == 201, skills_sub.content
    assert score_submission(skills_sub.json()["id"]) == Status.SCORED
    scored.append(skills_sub.json()["id"])

    queued = upload(alice_api, "expmrc-c3", {}, method_name="Waiting")  # still queued
    return {
        "tasks": tasks, "alice": alice, "bob": bob, "alice_api": alice_api, "bob_api": bob_api,
        "scored": scored, "rejected": rejected_ids, "failed": failed_id, "queued": queued.json()["id"],
        "responses": responses, "leak": leak,
    }


def all_submission_ids(world):
    return world["scored"] + world["rejected"] + [world["failed"], world["queued"]]


# --------------------------------------------------------------------------- every route


# Passages with answer spans: checked structurally (test_inputs_carry_no_gold_fields).
INPUT_ROUTES = {"api-task-inputs", "task-inputs", "api-task-skill-inputs"}


def routes():
    """(name, regex) of every URL pattern outside the admin, straight from the resolver, so a
    route added later is crawled without anyone remembering to list it here."""

    def walk(patterns, namespace=None):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, pattern.namespace or namespace)
            elif namespace != "admin" and pattern.name is not None:
                # Unnamed patterns are the deprecated /api/ aliases of the named /api/v1/ routes.
                yield pattern.name, pattern.pattern.regex

    return list(walk(get_resolver().url_patterns))


def crawl_urls(world):
    """One URL per route and parameter value: every task and the benchmark for slugs, every
    submission for ids; format suffixes (json, the browsable api) once per route."""
    slugs = SLUGS + ["expmrc"]
    pks = [str(pk) for pk in all_submission_ids(world)]
    urls = set()
    for name, regex in routes():
        params = set(regex.groupindex)
        values = {"slug": slugs, "pk": pks, "format": ["json", "api"], "skill": ["s1", "s5", "s13"],
                  "name": ["validation-error", "quota-exceeded", "submission-rejected"],  # problem types
                  "uidb64": ["MQ"], "token": ["set-password"]}  # a password-reset link (invalid here)
        unknown = params - set(values)
        assert not unknown, f"route {name} has parameters {unknown}: teach the crawl to fill them"
        if "format" in params:
            values = {**values, "slug": slugs[:1], "pk": pks[:1], "skill": values["skill"][:1]}
        combos = [{}]
        for param in sorted(params):
            combos = [{**combo, param: value} for combo in combos for value in values[param]]
        for kwargs in combos:
            try:
                urls.add((name, reverse(name, kwargs=kwargs)))
            except NoReverseMatch:  # e.g. a task slug on a benchmark-only route shape
                pass
    names = {name for name, _ in urls}
    assert names == {name for name, _ in routes()}, "some routes could not be crawled"
    # Query-string routes: the compare views for pairs of every visibility.
    for a, b in zip(pks, pks[1:] + pks[:1], strict=True):
        urls.add(("compare", f"/compare/?a={a}&b={b}"))
        urls.add(("api-compare", f"/api/compare/?a={a}&b={b}"))
    return sorted(urls)


def clients(world):
    anonymous, alice, bob = Client(), Client(), Client()
    alice.force_login(world["alice"])
    bob.force_login(world["bob"])
    token_alice = APIClient()
    token_alice.credentials(HTTP_AUTHORIZATION=f"Token {token_for(world['alice'])}")
    return {"anonymous": anonymous, "alice": alice, "bob": bob, "alice (token)": token_alice}


def crawl(world):
    for who, client in clients(world).items():
        for name, url in crawl_urls(world):
            response = client.get(url)
            assert response.status_code < 500 and response.status_code != 429, (who, url)
            yield name, f"{who} GET {url}", response


def assert_no_hidden_keys(label, response):
    if response.get("Content-Type", "").startswith("application/json"):
        assert not set(keys_anywhere(json.loads(response.content))) & HIDDEN_KEYS, label


def test_no_response_anywhere_carries_gold(world):
    checked = set()
    for name, label, response in crawl(world):
        if name in INPUT_ROUTES:
            continue
        assert gold_found(response.content) == [], label
        assert b"item_scores" not in response.content, label
        if name != "api-schema":
            assert_no_hidden_keys(label, response)
        if response.status_code == 200:
            checked.add(name)
    # The crawl reached real content: every listed page and endpoint answered 200 to someone.
    assert {"home", "task-leaderboard", "task-leaderboard-csv", "task-submit", "submission-detail",
            "my-submissions", "account", "api-task-list", "api-task-detail", "api-task-leaderboard",
            "api-benchmark-list", "api-benchmark-detail", "api-submission-list", "api-submission-detail",
            "api-schema", "api-docs", "api-root"} <= checked


def test_write_responses_carry_no_gold(world):
    """Uploads (accepted and rejected), PATCH, cancel, and the form re-rendered for a bad file."""
    alice = world["alice_api"]
    pk = world["scored"][0]
    responses = list(world["responses"])
    for label, response in [
        ("PATCH", alice.patch(f"/api/submissions/{pk}/", {"description": "renamed"}, format="json")),
        ("cancel refused", alice.post(f"/api/submissions/{pk}/cancel/")),
        ("cancel", alice.post(f"/api/submissions/{world['queued']}/cancel/")),
    ]:
        assert response.status_code < 500, label
        assert_no_hidden_keys(label, response)
        responses.append((label, response.content))
    page = Client()
    page.force_login(world["alice"])
    race = perfect_predictions(fixture_gold("expmrc-race"))
    race["fx-r-02-0"]["answer"] = "c"
    form = page.post("/tasks/expmrc-race/submit/", {"method_name": "x", "file": upload_file(race)})
    assert form.status_code == 400 and "uppercase option letter" in html.unescape(form.content.decode())
    responses.append(("form with rejected file", form.content))
    for label, body in responses:
        assert gold_found(body) == [], label
        assert b"item_scores" not in body, label


def test_owner_sees_scores_but_no_per_item_results(world):
    listing = world["alice_api"].get("/api/submissions/").json()
    scored = [row for row in listing if row["status"] == "scored"]
    assert len(scored) == 5 and all(row["scores"]["overall_f1"] == 100.0 for row in scored)  # 4 tasks + skills
    assert all(set(row["ci"]) == set(row["scores"]) for row in scored)
    # The server does keep them, for CIs and diagnostics.
    assert all(Submission.objects.get(pk=row["id"]).item_scores for row in scored)


def test_skill_inputs_are_structurally_free_of_answers(world):
    listing = Client().get("/api/tasks/expmrc-squad/skills/").json()
    built = [row for row in listing["skills"] if row["inputs_url"]]
    assert built, listing
    original_ids = sorted(qa["id"] for a in fixture_gold("expmrc-squad")["data"] for p in a["paragraphs"]
                          for qa in p["qas"])
    for row in built:
        body = Client().get(row["inputs_url"]).json()
        for article in body["data"]:
            for paragraph in article["paragraphs"]:
                assert set(paragraph) <= {"id", "context", "qas"}
                assert all(set(qa) == {"id", "question"} for qa in paragraph["qas"])
        # Every question is listed, dropped ones too: the list must not reveal which were dropped.
        assert sorted(qa["id"] for a in body["data"] for p in a["paragraphs"] for qa in p["qas"]) == original_ids


def test_public_inputs_are_structurally_free_of_answers(world):
    for slug, task in world["tasks"].items():
        for url in (f"/api/tasks/{slug}/inputs/", f"/api/tasks/{slug}/inputs.json", f"/tasks/{slug}/inputs.json"):
            response = Client().get(url)
            assert response.status_code == 200, url
            body = json.loads(response.getvalue())  # streamed from the stored file, or rendered
            keys = set(keys_anywhere(body))
            assert not keys & HIDDEN_KEYS, url
            if task.kind == "multichoice":
                assert "answers" not in keys
                assert all(set(p) == {"id", "article", "questions", "options"} for p in body["data"]), url
            else:
                assert keys <= {"version", "data", "title", "paragraphs", "id", "context", "qas", "question"}, url
            assert body["version"] == fixture_gold(slug)["version"]
        browsable = html.unescape(Client().get(f"/api/tasks/{slug}/inputs/?format=api").content.decode())
        assert '"answers"' not in browsable and '"evidences"' not in browsable and "answer_start" not in browsable


def test_pages_show_what_they_should(world):
    """The crawl is only meaningful if the pages really show the entries."""
    alice = Client()
    alice.force_login(world["alice"])
    board = alice.get("/tasks/expmrc-squad/").content.decode()
    assert "Perfect expmrc-squad" in board and "100.000" in board and "Private expmrc-squad" not in board
    failed = alice.get(f"/submissions/{world['failed']}/").content.decode()
    assert "Internal scoring error" in failed and "The scorer failed on this file" in failed
    private = world["bob_api"].get(f"/api/submissions/{world['scored'][1]}/").json()
    assert private["scores"]["overall_f1"] == 100.0 and private["public"] is False


# --------------------------------------------------------------------------- messages and logs


def test_error_messages_carry_no_gold(world):
    messages = {pk: Submission.objects.get(pk=pk).error_message for pk in world["rejected"] + [world["failed"]]}
    assert all(messages.values()), messages
    for pk, message in messages.items():
        assert gold_found(message) == [], (pk, message)
    assert world["leak"] not in messages[world["failed"]]
    rejected = Submission.objects.filter(pk__in=world["rejected"])
    assert {s.status for s in rejected} == {Status.REJECTED}
    assert 'field "evidence" is missing' in messages[world["rejected"][0]]
    assert '"answer" is "b"' in messages[world["rejected"][1]]
    assert 'keys not in the test set: line 1: "extra-key"' in messages[world["rejected"][2]]


def test_logs_during_scoring_carry_no_gold(world, caplog):
    records = caplog.get_records("setup") + caplog.get_records("call")  # the world is built in setup
    assert any("scorer raised RuntimeError" in r.getMessage() for r in records)
    formatter = logging.Formatter()
    for record in records:
        text = record.getMessage()
        if record.exc_info:
            text += formatter.formatException(record.exc_info)
        assert gold_found(text) == [], (record.name, text)


def test_diagnostics_publish_no_group_below_the_minimum(world):
    """A group's accuracy is its questions' outcomes when it is small (the questions are public):
    no diagnostics response or page of a hidden set lists a group under the minimum size."""
    from scoring.disclosure import disclosable
    from submissions.diagnostics import HIDDEN_MIN_GROUP_SIZE

    span_entries = 0
    for pk in world["scored"]:
        body = world["alice_api"].get(f"/api/submissions/{pk}/diagnostics/").json()
        diagnostics = body.get("diagnostics") or {}
        qt, bias = diagnostics.get("question_types"), diagnostics.get("linguistic_bias")
        if not qt:
            continue
        span_entries += 1
        sizes = [group["n"] for test in qt["categorical"]["tests"] for group in test["groups"].values()]
        sizes += [test["n"] for test in qt["one_vs_rest"]["tests"]]
        sizes += [subset["n"] for prop in bias["properties"] for subset in prop["bins"]]
        assert all(n >= HIDDEN_MIN_GROUP_SIZE for n in sizes), (pk, sizes)
        # Nor one all right or all wrong (the entries are perfect): only the whole set, the public score.
        shown = [(g["correct"], g["n"]) for test in qt["categorical"]["tests"] for g in test["groups"].values()]
        assert all(disclosable(correct, n) or n == qt["n_items"] for correct, n in shown), (pk, shown)
        # The fixture sets have fewer questions than the minimum: their groups were there, pooled, withheld.
        assert all(test["pooled_groups"] for test in qt["categorical"]["tests"]), pk
        page = Client()
        page.force_login(world["alice"])
        assert "fewer than" in page.get(f"/submissions/{pk}/").content.decode()
    assert span_entries >= 2  # SQuAD and CMRC 2018 entries were checked
