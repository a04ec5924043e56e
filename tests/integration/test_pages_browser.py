"""Every kind of page in a real browser (headless Debian Chromium, driven by Playwright) at
desktop (1280 px) and phone (390 px) width: no horizontal overflow on the phone, the ranking
column of a board on screen, no console error, and no serious or critical axe-core finding.

axe-core is vendored for this test only (tests/integration/vendor/axe.min.js, MPL-2.0, from the
npm registry's axe-core package); it is injected into each page, never served by the product."""
import json
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from expbench_client.client import Client

from .conftest import sample_and_expected
from .stack import REPO, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.browser]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
ICQ_FIXTURES = REPO / "tests" / "fixtures" / "icq"
PASSWORD = "pages-browser-pw-41"
# Set EXPBENCH_SCREENSHOTS to a folder to keep the screenshots (they go to a temporary one otherwise).
SCREENSHOTS = Path(os.environ.get("EXPBENCH_SCREENSHOTS") or tempfile.mkdtemp(prefix="expbench-pages-"))
FULL_PAGE_SHOTS = bool(os.environ.get("EXPBENCH_SCREENSHOTS"))  # whole pages only when asked: they take time
WIDTHS = {"desktop": 1280, "phone": 390}


def populate(stack):
    """What the pages need beyond load_demo: the official SQuAD sample submission (its
    diagnostics are waited for before its page is checked), a skill submission (the skills board and a second entry to compare with), a
    rejected upload, and an NLI classification task. QUACKIE is shown through its published
    boards, which need no hosted model. Returns the address of each page kind to visit."""
    token = stack.create_user("pages-owner", PASSWORD)
    result = stack.manage("import_classification", str(ICQ_FIXTURES / "nli_test.jsonl"), "--task", "pages-nli",
                          "--version", "1", "--name", "NLI pages")
    assert result.returncode == 0, result.stdout + result.stderr
    content, _ = sample_and_expected()
    sample = json.loads(content)
    status, answer = stack.upload(token, "expmrc-squad", content, method_name="Pages SQuAD sample")
    assert status == 201, answer
    squad = answer["id"]
    status, rejected = stack.upload(token, "expmrc-squad", b"", method_name="Pages empty file")
    assert status in (201, 400), rejected

    def skill_sets_built():  # load_demo queued the build; the background worker runs it
        status, body = stack.request("GET", "/api/v1/tasks/expmrc-squad/skills/")
        return (body.get("build") or {}).get("status") == "done"

    wait_until(skill_sets_built, "the SQuAD skill sets")
    two_thirds = {key: value for index, (key, value) in enumerate(sample.items()) if index % 3}
    skills = json.dumps({"original": two_thirds, "s1": two_thirds, "s4": sample}).encode()
    status, answer = Client(stack.url, token).submit("expmrc-squad", skills, method_name="Pages skills",
                                                     filename="skills.json", kind="skills", public=True)
    assert status == 201, answer
    skill_entry = answer["id"]
    for pk in (squad, skill_entry):
        assert stack.wait_for(pk, token, timeout=120)["status"] == "scored"

    published = "quackie-published-squad-qa"
    return {
        "home": "/",
        "benchmark-expmrc": "/benchmarks/expmrc/",
        "benchmark-quackie": "/benchmarks/quackie/",
        "benchmark-checklist": "/benchmarks/checklist-mrc/",
        "benchmark-classification": "/benchmarks/nlu/",
        "benchmark-overview": "/benchmarks/expmrc/overview/",
        "benchmark-evaluation": "/benchmarks/expmrc/evaluation/",
        "benchmark-terms": "/benchmarks/expmrc/terms/",
        "board-span": "/tasks/expmrc-squad/",
        "board-multichoice-zh": "/tasks/expmrc-c3/",
        "board-interpretation": f"/tasks/{published}/",
        "board-checklist": "/tasks/checklist-squad/",
        "board-classification": "/tasks/pages-nli/",
        "skills": "/tasks/expmrc-squad/skills/",
        "compare": f"/compare/?a={squad}&b={skill_entry}",
        "submit": "/tasks/expmrc-squad/submit/",
        "submit-interpretation": f"/tasks/{published}/submit/",
        "my-submissions": "/submissions/",
        "login": "/accounts/login/",
        "not-found": "/tasks/no-such-task/",
        # Last: its diagnostics are computed meanwhile (the page updates itself until they are there).
        "entry": f"/submissions/{squad}/",
    }


def settled(address):
    """Whether a page's background work is done (it no longer carries the data-refresh marker)."""
    try:
        with urllib.request.urlopen(address, timeout=10) as response:
            return b'data-refresh="' not in response.read()
    except urllib.error.HTTPError as error:
        return error.code == 404


def log_in(context, url, username="pages-owner", password=PASSWORD):
    page = context.new_page()
    page.goto(url + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()
    assert "/accounts/login/" not in page.url, "could not log in"
    page.close()


def axe_findings(page):
    """axe-core's violations of impact serious or critical: (rule id, impact, targets, help)."""
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:5], v["help"])
            for v in result["violations"] if v["impact"] in ("serious", "critical")]


def layout_problems(page, width):
    """At the current viewport: horizontal overflow, and a board whose rank or ranking metric is
    not on screen (hidden, or cut off by the page or by the table's own scroll box)."""
    problems = []
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    if scroll > inner:
        problems.append(f"overflows: {scroll} px wide at {inner} px")
    hidden = page.evaluate("""sel => [...document.querySelectorAll(sel)].filter(th => {
        const cell = th.getBoundingClientRect();
        const box = (th.closest('.table-wrap') || document.documentElement).getBoundingClientRect();
        return getComputedStyle(th).display === 'none' || cell.width === 0 || cell.left < box.left - 1
            || cell.right > Math.min(box.right, window.innerWidth) + 1;
    }).map(th => th.innerText)""", "table.leaderboard th.primary, table.leaderboard th.rank, table.home-table th.primary")
    problems += [f"ranking column {text!r} not on screen" for text in hidden]
    return [f"{width} px: {problem}" for problem in problems]


def inspect_page(page, name):
    """The loaded page at desktop width in the light theme, then at phone width in the dark theme
    (so both themes' contrast is checked): layout problems and axe findings, with screenshots."""
    problems = []
    # Evaluated through the browser's debugging protocol, which the page's Content-Security-Policy
    # does not govern: a <script> tag with inline code would be refused, as it should be.
    page.evaluate(AXE.read_text() + "\n;undefined")
    for label, width in WIDTHS.items():
        if label == "phone":
            page.set_viewport_size({"width": width, "height": 800})
            page.emulate_media(color_scheme="dark")
        else:
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme="light")
        problems += layout_problems(page, width)
        problems += [f"{width} px: axe {rule} ({impact}): {help_} {targets}"
                     for rule, impact, targets, help_ in axe_findings(page)]
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=FULL_PAGE_SHOTS)
    return problems


def check_page(context, url, name, path):
    """Load one page once and check it at desktop width in the light theme, then at phone width
    in the dark theme (so both themes' contrast is checked). Returns the problems found."""
    page = context.new_page()
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_viewport_size({"width": WIDTHS["desktop"], "height": 900})
    page.emulate_media(color_scheme="light")
    response = page.goto(url + path)
    problems = []
    expected = 404 if name == "not-found" else 200
    if response.status != expected:
        problems.append(f"HTTP {response.status}")
    problems += inspect_page(page, name)
    if name == "not-found":  # the browser reports the 404 of the page itself; nothing else may fail
        errors = [e for e in errors if "status of 404" not in e]
    problems += [f"console: {e}" for e in errors]
    page.close()
    return problems


@pytest.fixture(scope="module")
def browser():
    from .test_browser import launch_chromium

    with launch_chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def pages(embedded_stack):
    return populate(embedded_stack)


def test_every_page_kind_at_desktop_and_phone_width(embedded_stack, browser, pages):
    """Each page: the right status, no console error, no horizontal overflow, the ranking column
    on screen, no serious or critical axe finding, at 1280 px (light) and 390 px (dark)."""
    url = embedded_stack.url
    context = browser.new_context()
    log_in(context, url)
    problems = {}
    for name, path in pages.items():
        # A page whose background work (cue discovery, diagnostics) is still running is checked
        # once that work is done, so that what it finally shows (the charts) is checked too; the
        # state while it updates itself is checked by test_a_page_that_updates_itself_*.
        wait_until(lambda path=path: settled(url + path), f"{path} to finish its background work", timeout=240)
        found = check_page(context, url, name, path)
        if found:
            problems[f"{name} ({path})"] = found
    context.close()
    assert problems == {}, f"screenshots in {SCREENSHOTS}"


def test_a_benchmarks_own_pages_and_an_entrys_downloads(embedded_stack, browser, pages):
    """From a benchmark's boards to its Overview (the best score of each task over time, drawn
    on the server, and the inputs' licence), Evaluation and Terms pages by their tabs; an entry's
    page offers its results for download, and not its prediction file, which the task keeps
    private."""
    url = embedded_stack.url
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(url + "/benchmarks/expmrc/")
    page.get_by_role("link", name="Overview", exact=True).click()
    page.wait_for_url("**/benchmarks/expmrc/overview/")
    assert page.locator("nav.tabs a[aria-current=page]").inner_text() == "Overview"
    licence = page.get_by_role("link", name="CC BY-SA 4.0")
    assert licence.get_attribute("href") == "https://creativecommons.org/licenses/by-sa/4.0/"

    def sample_is_a_record():  # the board is stored by a worker: the page shows it once it is
        page.reload()
        return page.locator("svg#progress-expmrc-squad circle.record").count() >= 1

    wait_until(sample_is_a_record, "the SQuAD sample as a record on the overview", timeout=120)
    chart = page.locator("svg#progress-expmrc-squad")
    assert chart.get_attribute("role") == "img" and "Overall F1" in chart.locator("title").first.text_content()
    box = chart.bounding_box()
    assert box["width"] > 200 and box["height"] > 80  # drawn, not collapsed
    # The day's record is its best ranked entry: this test's sample, or a better one that
    # another test of the same stack scored (the board's first ranked submission either way).
    board = page.request.get(url + "/api/v1/tasks/expmrc-squad/leaderboard/?limit=100").json()["results"]
    best = next(row for row in board if row["kind"] == "submission" and row["rank"] is not None)
    titles = " ".join(chart.locator("circle.record title").all_text_contents())
    assert best["method"] in titles and ("Pages SQuAD sample" in titles or best["scores"]["overall_f1"] >= next(
        row["scores"]["overall_f1"] for row in board if row["method"] == "Pages SQuAD sample")), titles

    page.get_by_role("link", name="Evaluation", exact=True).click()
    page.wait_for_url("**/benchmarks/expmrc/evaluation/")
    assert "Overall F1" in page.locator("#evaluation").inner_text()
    page.get_by_role("link", name="Terms", exact=True).click()
    page.wait_for_url("**/benchmarks/expmrc/terms/")
    rules = page.locator("#rules-expmrc-squad").inner_text()
    assert "results" in rules and "prediction files" not in rules

    page.goto(url + pages["entry"])
    results = page.get_by_role("link", name="results (JSON)")
    answer = page.request.get(url + results.get_attribute("href"))
    assert answer.ok and answer.json()["scores"]["overall_f1"] > 0 and "item_scores" not in answer.json()
    assert page.get_by_role("link", name="prediction file").count() == 0
    assert errors == []
    context.close()


def test_a_visitor_on_a_phone_can_log_in_and_sign_up(embedded_stack, browser):
    context = browser.new_context(viewport={"width": 390, "height": 800})
    page = context.new_page()
    page.goto(embedded_stack.url + "/")
    for name in ("Log in", "Sign up"):
        box = page.get_by_role("link", name=name, exact=True).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (name, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    context.close()


# --------------------------------------------------------------------------- a page that updates itself

REFRESH_OWNER, REFRESH_PASSWORD = "refresh-owner", "refresh-owner-pw-58"
PERIOD = 2.0  # seconds between two updates of a submission's page (templates/submissions/detail.html)


def queued_submission(stack, username):
    """A submission that stays queued: written straight into the database and never sent to a
    worker, so its page keeps updating itself for as long as the test needs (the reaper would send
    it only QUEUE_LEASE_SECONDS, 300 s, later). The test ends its work by cancelling it."""
    code = (
        "from django.contrib.auth.models import User; from django.utils import timezone;"
        "from benchmark.models import Task; from submissions.models import Submission;"
        "task = Task.objects.get(slug='expmrc-squad');"
        f"s = Submission.objects.create(user=User.objects.get(username={username!r}), task=task,"
        " test_set=task.current_test_set(), method_name='Waiting entry', status='queued',"
        " queued_at=timezone.now(), public=False);"
        "print(s.pk)"
    )
    result = stack.manage("shell", "-c", code)
    assert result.returncode == 0, result.stdout + result.stderr
    return int(result.stdout.split()[-1])


def live_state(page):
    """The status line's state as static/js/live-refresh.js exposes it on its element."""
    return page.evaluate("""() => {
        const root = document.querySelector('[data-refresh]');
        if (!root) return null;
        const button = root.querySelector('button'), status = root.querySelector('[role=status]');
        return {state: root.dataset.refreshState || null, checks: Number(root.dataset.refreshChecks || 0),
                button: button && button.textContent, status: status && status.textContent,
                dot: getComputedStyle(root.querySelector('.live-refresh-dot')).animationName};
    }""")


def heading(page):
    return page.locator("main h1").inner_text()


def test_a_page_that_updates_itself_passes_axe_and_can_be_paused(embedded_stack, browser):
    """The page of a queued submission, while it updates itself: no serious or critical axe
    finding (no meta refresh), a keyboard-operable Pause button that stops the updates (for more
    than two periods, and across a reload of the tab), Resume that restarts them, server changes
    swapped in without reloading, the end of the work stopping the updates, and a Reload link
    without JavaScript."""
    stack = embedded_stack
    token = stack.create_user(REFRESH_OWNER, REFRESH_PASSWORD)
    pk = queued_submission(stack, REFRESH_OWNER)
    address = f"{stack.url}/submissions/{pk}/"

    def rename(name):
        status, body = stack.request("PATCH", f"/api/v1/submissions/{pk}/", token=token, json_body={"method_name": name})
        assert status == 200, body

    def checks_after_a_while(page):
        time.sleep(2.5 * PERIOD)
        return live_state(page)["checks"]

    context = browser.new_context()
    log_in(context, stack.url, REFRESH_OWNER, REFRESH_PASSWORD)
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(address)
    page.evaluate("window.sameDocument = true")  # gone if the page were reloaded
    # Polled through evaluate: wait_for_function compiles its text in the page, which the
    # Content-Security-Policy refuses (no 'unsafe-eval').
    wait_until(lambda: page.evaluate("Number(document.querySelector('[data-refresh]').dataset.refreshChecks) >= 1"),
               "the page's first check for news", timeout=60)
    assert live_state(page)["state"] == "running"

    # axe while the page updates itself, at both widths and in both themes.
    problems = inspect_page(page, "entry-updating")
    state = live_state(page)
    assert state["state"] == "running" and state["checks"] >= 1
    assert problems == [], f"screenshots in {SCREENSHOTS}"
    page.set_viewport_size({"width": WIDTHS["desktop"], "height": 900})
    page.emulate_media(color_scheme="light")
    # The dot pulses while updates run, unless the reader asked for reduced motion.
    assert live_state(page)["dot"] == "pulse"
    page.emulate_media(reduced_motion="reduce")
    assert live_state(page)["dot"] == "none"
    page.emulate_media(reduced_motion="no-preference")

    # A change on the server reaches the page by a swap, not a reload.
    rename("Waiting entry, renamed")
    page.locator("main h1", has_text="Waiting entry, renamed").wait_for()
    assert page.evaluate("window.sameDocument === true")

    # Pause from the keyboard: the button is in the tab order.
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Pause updates":
            break
    else:
        raise AssertionError("Tab never reached the Pause updates button")
    page.keyboard.press("Enter")
    state = live_state(page)
    assert (state["state"], state["button"], state["dot"]) == ("paused", "Resume updates", "none")
    assert "paused" in state["status"]
    assert page.evaluate("document.activeElement.textContent") == "Resume updates"  # focus stays on it
    page.screenshot(path=str(SCREENSHOTS / "entry-paused-1280.png"))
    rename("Waiting entry, changed while paused")
    assert checks_after_a_while(page) == state["checks"]  # no request for more than two periods
    assert heading(page) == "Waiting entry, renamed"

    # The pause holds for the tab (sessionStorage): after a reload the page still waits.
    page.reload()
    assert heading(page) == "Waiting entry, changed while paused"  # what the reload fetched
    assert live_state(page)["state"] == "paused"
    rename("Waiting entry, resumed")
    assert checks_after_a_while(page) == 0
    assert heading(page) == "Waiting entry, changed while paused"

    # Resume (Space on the button): updates start again at once, and keep going.
    page.evaluate("window.sameDocument = true")
    page.get_by_role("button", name="Resume updates").focus()
    page.keyboard.press("Space")
    page.locator("main h1", has_text="Waiting entry, resumed").wait_for()
    state = live_state(page)
    assert state["state"] == "running" and state["button"] == "Pause updates" and state["checks"] >= 1
    assert page.evaluate("sessionStorage.getItem('expbench.updatesPaused')") is None
    assert checks_after_a_while(page) > state["checks"]

    # Without JavaScript: no button, the page stays still, a plain Reload link to itself.
    still = browser.new_context(java_script_enabled=False)
    log_in(still, stack.url, REFRESH_OWNER, REFRESH_PASSWORD)
    plain = still.new_page()
    plain.goto(address)
    reload_link = plain.get_by_role("link", name="Reload", exact=True)
    assert reload_link.is_visible() and reload_link.get_attribute("href") == f"/submissions/{pk}/"
    assert plain.get_by_role("button", name="Pause updates").count() == 0
    still.close()

    # The work ends (here: cancelled): the page shows it, says so, and stops asking.
    status, body = stack.request("POST", f"/api/v1/submissions/{pk}/cancel/", token=token)
    assert status == 200 and body["status"] == "cancelled", body
    page.locator("#status", has_text="Cancelled").wait_for()
    state = live_state(page)
    assert state["state"] == "done" and state["button"] is None and "finished" in state["status"]
    page.screenshot(path=str(SCREENSHOTS / "entry-done-1280.png"))
    assert checks_after_a_while(page) == state["checks"]
    assert page.evaluate("window.sameDocument === true")
    assert errors == []
    context.close()
