"""Every kind of page in a real browser (headless Debian Chromium, driven by Playwright) at
desktop (1280 px) and phone (390 px) width: no horizontal overflow on the phone, the ranking
column of a board on screen, no console error, and no serious or critical axe-core finding.

axe-core is vendored for this test only (tests/integration/vendor/axe.min.js, MPL-2.0, from the
npm registry's axe-core package); it is injected into each page, never served by the product."""
import json
import os
import shutil
import tempfile
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
        status, body = stack.request("GET", "/api/tasks/expmrc-squad/skills/")
        return (body.get("build") or {}).get("status") == "done"

    wait_until(skill_sets_built, "the SQuAD skill sets")
    two_thirds = {key: value for index, (key, value) in enumerate(sample.items()) if index % 3}
    skills = json.dumps({"original": two_thirds, "s1": two_thirds, "s4": sample}).encode()
    status, answer = Client(stack.url, token).submit("expmrc-squad", skills, method_name="Pages skills",
                                                     filename="skills.json", kind="skills")
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
        # Last: its diagnostics are computed meanwhile (the page refreshes itself until they are there).
        "entry": f"/submissions/{squad}/",
    }


def settled(address):
    """Whether a page no longer refreshes itself (its background work is done)."""
    try:
        with urllib.request.urlopen(address, timeout=10) as response:
            return b'http-equiv="refresh"' not in response.read()
    except urllib.error.HTTPError as error:
        return error.code == 404


def log_in(context, url):
    page = context.new_page()
    page.goto(url + "/accounts/login/")
    page.fill("#id_username", "pages-owner")
    page.fill("#id_password", PASSWORD)
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
    page.add_script_tag(path=str(AXE))
    for label, width in WIDTHS.items():
        if label == "phone":
            page.set_viewport_size({"width": width, "height": 800})
            page.emulate_media(color_scheme="dark")
        problems += layout_problems(page, width)
        problems += [f"{width} px: axe {rule} ({impact}): {help_} {targets}"
                     for rule, impact, targets, help_ in axe_findings(page)]
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=FULL_PAGE_SHOTS)
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
        # A page whose background work (cue discovery, diagnostics) is still running refreshes
        # itself every few seconds: it is checked once that work is done.
        wait_until(lambda: settled(url + path), f"{path} to stop refreshing itself", timeout=240)
        found = check_page(context, url, name, path)
        if found:
            problems[f"{name} ({path})"] = found
    context.close()
    assert problems == {}, f"screenshots in {SCREENSHOTS}"


def test_a_visitor_on_a_phone_can_log_in_and_sign_up(embedded_stack, browser):
    context = browser.new_context(viewport={"width": 390, "height": 800})
    page = context.new_page()
    page.goto(embedded_stack.url + "/")
    for name in ("Log in", "Sign up"):
        box = page.get_by_role("link", name=name, exact=True).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (name, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    context.close()
