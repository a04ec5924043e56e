"""A real browser (headless Debian Chromium, driven by Playwright) signs up, uploads a sample
submission, waits on the status page and finds the entry on the leaderboard."""
import contextlib
import shutil
import tempfile
from urllib.request import urlopen

import pytest

from .conftest import sample_and_expected
from .stack import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.browser]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@contextlib.contextmanager
def launch_chromium():
    """Headless Debian Chromium through Playwright (also used by test_pages_browser)."""
    if not shutil.which("chromium"):
        pytest.skip("Debian chromium is not installed (apt-get install chromium; .ci/run does this)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # The flags stop Chromium's background calls to Google, which this closed network refuses.
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def browser():
    with launch_chromium() as chromium:
        yield chromium


def test_signup_upload_status_leaderboard(embedded_stack, browser, tmp_path):
    content, expected = sample_and_expected()
    predictions = tmp_path / "squad-predictions.json"
    predictions.write_bytes(content)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"not-a-question": {"answer": "x", "evidence": "y"}}')
    url = embedded_stack.url
    # Until the workers have stored every board, the home page says "being computed" and
    # reloads itself, which would take the one-time welcome message away before it is read.
    wait_until(lambda: "being computed" not in urlopen(url + "/", timeout=30).read().decode(), "every board stored")

    page = browser.new_page()
    page.set_default_timeout(30_000)
    page.goto(url + "/")
    page.get_by_role("link", name="Sign up").click()
    page.fill("#id_username", "browser-user")
    page.fill("#id_team", "Headless Lab")
    page.fill("#id_password1", "a-long-browser-pass-91")
    page.fill("#id_password2", "a-long-browser-pass-91")
    page.get_by_role("button", name="Sign up").click()
    assert page.get_by_text("Welcome, browser-user").is_visible()

    page.goto(url + "/tasks/expmrc-squad/")
    page.get_by_role("link", name="Submit predictions").click()

    # A bad file first: the form comes back with the precise message.
    page.set_input_files("#id_file", str(bad))
    page.fill("#id_method_name", "Browser bad file")
    page.get_by_role("button", name="Upload and score").click()
    assert "not-a-question" in page.locator(".field-error").inner_text()

    page.set_input_files("#id_file", str(predictions))
    page.fill("#id_method_name", "Browser system")
    page.check("#id_public")  # entries are private unless the researcher says otherwise
    page.get_by_role("button", name="Upload and score").click()
    assert "/submissions/" in page.url
    # The status page updates itself (static/js/live-refresh.js) until the score is there.
    page.locator("#status", has_text="Scored").wait_for(timeout=60_000)
    scores = page.locator("#scores").inner_text()
    assert f"{expected['overall_f1']:.3f}" in scores

    page.goto(url + "/tasks/expmrc-squad/")
    row = page.locator("#leaderboard tr", has_text="Browser system")
    # A worker stores the board after the change (a request never computes it): reload until it is there.
    def shown():
        if row.count() == 1:
            return True
        page.reload()
        return False

    wait_until(shown, "the entry on the board", timeout=90)
    assert row.count() == 1
    assert "Headless Lab" in row.inner_text()
    assert f"{expected['overall_f1']:.3f}" in row.inner_text()
    page.screenshot(path=str(tempfile.gettempdir() + "/expbench-leaderboard.png"), full_page=True)

    page.goto(url + "/submissions/")
    assert page.locator("#my-submissions").get_by_text("Browser system").is_visible()
    # The rejected upload is left out by default, one click away.
    assert page.locator("#my-submissions").get_by_text("Rejected", exact=True).count() == 0
    page.locator("#rejected-note a").click()
    assert page.locator("#my-submissions").get_by_text("Rejected", exact=True).is_visible()
    assert page.locator("#my-submissions").get_by_text("Browser system").count() == 0
