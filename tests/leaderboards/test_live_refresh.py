"""Pages whose background work runs update themselves through static/js/live-refresh.js: the
server marks them with data-refresh, loads the script with defer and offers a plain Reload link
for readers without JavaScript. No page reloads itself with <meta http-equiv="refresh">, which a
reader cannot stop (axe-core's critical meta-refresh finding). The script itself is driven in
Chromium by tests/integration/test_pages_browser.py."""
import re

from django.contrib.staticfiles import finders
from django.test import Client

from benchmark import cues
from benchmark.tasks import build_skill_sets
from submissions import intake
from submissions.tasks import compute_diagnostics, score_submission
from tests.factories import fixture_gold, logged_in, make_task, make_user, perfect_predictions, upload_file

SCRIPT = '<script src="/static/js/live-refresh.js" defer></script>'


def assert_updates_itself(page, path, seconds):
    assert "http-equiv" not in page
    assert page.count(SCRIPT) == 1
    assert re.search(rf'<div class="live-refresh" id="live-refresh" data-refresh="{seconds}">', page)
    # Without JavaScript: a plain link to the page itself.
    assert re.search(rf'<a href="{re.escape(path)}">Reload</a>', page)
    # Only external scripts: the pages stay compatible with a strict script-src 'self'.
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", page) == []


def assert_still(page):
    assert "http-equiv" not in page and "live-refresh" not in page and "data-refresh" not in page


def test_a_submission_page_updates_itself_until_scored_and_diagnosed(db, settings):
    settings.BOOTSTRAP_RESAMPLES = 200
    task = make_task("expmrc-squad")
    alice = make_user("alice")
    submission = intake.submit(user=alice, task=task, method_name="Lantern QA",
                               uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    client = logged_in(alice)
    path = f"/submissions/{submission.pk}/"
    assert_updates_itself(client.get(path).content.decode(), path, 2)
    score_submission(submission.pk)
    assert_updates_itself(client.get(path).content.decode(), path, 2)  # diagnostics still queued
    compute_diagnostics(submission.pk)
    assert_still(client.get(path).content.decode())


def test_a_board_updates_itself_while_cue_discovery_is_queued(db):
    from benchmark.models import TestSet  # inside: pytest would collect a Test* name at module level

    task = make_task("expmrc-race")
    page = Client().get("/tasks/expmrc-race/").content.decode()
    assert_updates_itself(page, "/tasks/expmrc-race/", 3)
    cues.discover(TestSet.objects.get(pk=task.current_test_set().pk))
    assert_still(Client().get("/tasks/expmrc-race/").content.decode())


def test_the_skills_page_updates_itself_while_its_sets_are_built(db):
    task = make_task("expmrc-squad")
    page = Client().get("/tasks/expmrc-squad/skills/").content.decode()
    assert "Build: queued" in page
    assert_updates_itself(page, "/tasks/expmrc-squad/skills/", 3)
    build_skill_sets(task.current_test_set().pk)
    assert_still(Client().get("/tasks/expmrc-squad/skills/").content.decode())


def test_the_script_is_served_and_has_no_eval():
    path = finders.find("js/live-refresh.js")
    assert path, "static/js/live-refresh.js is missing"
    source = open(path, encoding="utf-8").read()
    # Nothing a strict Content-Security-Policy would block (no eval), and no HTML built from strings.
    assert "eval(" not in source and "new Function" not in source and "innerHTML =" not in source
