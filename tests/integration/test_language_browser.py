"""The pages in Simplified Chinese in a real browser (headless Debian Chromium, Playwright):
a reader picks 简体中文 in the header's chooser and stays on the page they were reading, now in
Chinese; a browser whose language is Chinese gets Chinese at once; the Chinese board has no
horizontal overflow on a phone and no serious or critical axe finding."""
import pytest

from .stack import wait_until
from .test_pages_browser import inspect_page

pytestmark = [pytest.mark.integration, pytest.mark.browser]

BOARD = "/tasks/expmrc-squad/"


@pytest.fixture(scope="module")
def browser():
    from .test_browser import launch_chromium

    with launch_chromium() as chromium:
        yield chromium


def heading_texts(page):
    return page.eval_on_selector_all("h1, h2, th", "nodes => nodes.map(n => n.innerText.trim())")


def test_chooser_turns_the_board_into_chinese(embedded_stack, browser):
    url = embedded_stack.url
    context = browser.new_context(locale="en-US")
    page = context.new_page()
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(url + BOARD)
    assert "How to read this board" in heading_texts(page)

    page.select_option("#language-select", "zh-hans")
    # The chooser posts, and the answer sends the browser back to the page: wait for that page.
    with page.expect_navigation(url=url + BOARD):
        page.click("#language-apply")
    wait_until(lambda: "如何解读本榜单" in heading_texts(page), "the board's headings in Chinese")
    assert page.url == url + BOARD, "the chooser must bring the reader back to the page they were on"
    assert page.get_attribute("html", "lang") == "zh-hans"
    assert page.locator(".crumbs a").first.inner_text() == "排行榜"
    assert "How to read this board" not in heading_texts(page)
    # The choice is remembered: the home page comes in Chinese too, although the browser asks for English.
    page.goto(url + "/")
    assert page.locator("h1").first.inner_text() == "可解释、偏差感知的排行榜"

    page.select_option("#language-select", "en")
    with page.expect_navigation(url=url + "/"):
        page.click("#language-apply")
    wait_until(lambda: page.locator("h1").first.inner_text() == "Explainable, bias-aware leaderboards",
               "the home page back in English")
    assert errors == []
    context.close()


def test_a_chinese_browser_gets_chinese_pages_that_fit_a_phone(embedded_stack, browser):
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    page.goto(embedded_stack.url + BOARD)
    assert "如何解读本榜单" in heading_texts(page)
    assert page.locator("#language-select").input_value() == "zh-hans"
    assert inspect_page(page, "board-span-zh-hans") == []
    context.close()
