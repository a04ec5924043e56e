"""Page states read at most once per ``PAGE_STATE_SECONDS`` by each web process.

Every public page view opens with one small state query (``core.db.state_cursor``: a board's
stamp, an entry's visibility) and then answers from what is stored. At hundreds of requests a
second for the same few boards, that query is a third of a stored page's cost in the web
process and as much again in the database server. A state read less than ``PAGE_STATE_SECONDS``
ago (default 1 s) is used again instead, in the process that read it: what a visitor sees may
lag a change (a new entry, a withdrawn one, a task hidden) by up to that long, as behind a
reverse proxy's micro-cache, while who may see what is still decided on every request from the
state. ``PAGE_STATE_SECONDS=0`` reads it on every request (the test suite does, so that a test
sees its own writes at once; tests/core/test_brief_memo.py checks the memo itself)."""
import functools
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from django.conf import settings

from .recent import RecentlyUsed

P = ParamSpec("P")
R = TypeVar("R")

#: States kept per function: a visitor asking for many unknown slugs or entries only pushes out
#: older states, which are read again when next asked for.
MAX_KEPT = 4096


def briefly_remembered(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` (of hashable arguments, without side effects a caller depends on), whose
    result is used again for ``PAGE_STATE_SECONDS`` after it was read, by every thread of the
    process. ``.forget()`` drops what it kept."""
    kept: RecentlyUsed[tuple[float, Any]] = RecentlyUsed(max_items=MAX_KEPT)

    @functools.wraps(function)
    def remembered(*args: P.args, **kwargs: P.kwargs) -> R:
        seconds = settings.PAGE_STATE_SECONDS
        if seconds <= 0:
            return function(*args, **kwargs)
        key = (args, tuple(sorted(kwargs.items())))
        now = time.monotonic()
        found = kept.get(key)
        if found is not None and now - found[0] < seconds:
            return found[1]
        value = function(*args, **kwargs)
        kept.put(key, (now, value))
        return value

    remembered.forget = kept.clear  # type: ignore[attr-defined]
    return remembered
