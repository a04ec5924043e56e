"""Test-wide setup.

pytest-django loads the Django settings before this file is imported, so environment
variables for settings belong in the test command (scripts/test.sh), not here.
"""
import os

# Small torch/numpy ops crawl on 2 cores with spinning OpenMP threads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_files_and_throttles(settings, tmp_path):
    from django.core.cache import cache

    from core.conditional import recent_bodies
    from core.rate_limits import forget_reservations

    settings.MEDIA_ROOT = tmp_path / "media"
    # PBKDF2 with its real work factor costs ~0.2 s per user created or logged in.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # A test reads the pages of its own writes at once (tests/core/test_brief_memo.py: the memo).
    settings.PAGE_STATE_SECONDS = 0
    cache.clear()  # API throttle counters live in the cache: each test starts fresh
    forget_reservations()  # and so does what this process kept of them
    recent_bodies.clear()  # stored pages of another test's database may come back under the same keys


@pytest.fixture(autouse=True)
def _board_worker(monkeypatch):
    """A stand-in for the worker that rebuilds boards: a request that finds a board out of date
    asks for a rebuild (leaderboards.store.request_rebuild), and here the rebuild happens at
    once, so a test reads the board of its latest change. In the product a request never
    computes a board; tests/leaderboards/test_board_store.py checks that path with this stand-in
    replaced (``queued_rebuilds``)."""
    from leaderboards import store

    def rebuild_now(task_ids):
        store.rebuild_tasks(list(task_ids))
        return True

    monkeypatch.setattr(store, "request_rebuild", rebuild_now)


@pytest.fixture
def drf_dispatches(monkeypatch):
    """The paths of the requests that went through DRF's dispatch (config/store_reads.py answers
    some anonymous reads ahead of it)."""
    from rest_framework.views import APIView

    calls = []
    original = APIView.dispatch

    def counting(self, request, *args, **kwargs):
        calls.append(request.path)
        return original(self, request, *args, **kwargs)

    monkeypatch.setattr(APIView, "dispatch", counting)
    return calls


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs_bwrap: needs bubblewrap; skipped where it is missing, failed when "
                   "EXPBENCH_REQUIRE_SANDBOX=1 (CI) so a missing sandbox never turns green")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """The one place that decides what a missing bwrap means for ``needs_bwrap`` tests: before
    their fixtures run, a skip with the reason on a laptop, a failure in CI."""
    import shutil

    if item.get_closest_marker("needs_bwrap") is None or shutil.which("bwrap"):
        return
    reason = "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap; .ci/run installs it)"
    if os.environ.get("EXPBENCH_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"EXPBENCH_REQUIRE_SANDBOX=1 but {reason}", pytrace=False)
    pytest.skip(reason)
