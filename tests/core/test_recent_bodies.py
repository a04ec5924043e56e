"""The stored answers a process keeps (core.conditional.RecentBodies): served again without the
shared cache, within a byte budget, oldest out first."""
import pytest
from django.core.cache import cache
from django.test import RequestFactory

from core.conditional import RecentBodies, recent_bodies, stored_answer, stored_response


def test_the_oldest_body_goes_first_and_a_big_one_is_not_kept():
    kept = RecentBodies(budget=1600)
    for name in "abcdefgh":
        kept.keep(name, b"x" * 200)
    assert kept.get("a") is not None  # a is now the most recently used
    kept.keep("i", b"y" * 200)
    assert kept.get("b") is None and kept.get("a") is not None and kept.size == 1600
    kept.keep("big", b"z" * 201)  # over an eighth of the budget
    assert kept.get("big") is None


@pytest.mark.django_db
def test_a_stored_answer_is_served_from_the_process_once_read():
    request = RequestFactory().get("/", HTTP_ACCEPT_ENCODING="gzip")
    rendered = []

    def render():
        rendered.append(1)
        from django.http import HttpResponse
        return HttpResponse(b"<p>board</p>" * 50, content_type="text/html")

    first = stored_response(request, "page:etag-1", render, seconds=60, content_type="text/html")
    cache.clear()  # the shared copy is gone: this process still has the bytes it stored
    again = stored_answer(request, "page:etag-1", content_type="text/html")
    assert again is not None and again.content == first.content and again["Content-Encoding"] == "gzip"
    assert rendered == [1]
    recent_bodies.clear()
    assert stored_answer(request, "page:etag-1", content_type="text/html") is None
