"""The cache every process shares (CACHE_URL; unset: a file cache in shared memory): the API throttle
counts a client's requests across all gunicorn workers, not per worker."""
import urllib.error
import urllib.request

import pytest

from config.settings import embedded_cache_dir

from .stack import Stack

pytestmark = pytest.mark.integration

LIMIT = 30


def get_status(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, None
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Retry-After")


def test_the_anonymous_rate_limit_holds_across_gunicorn_workers(tmp_path):
    stack = Stack(tmp_path, env={"API_RATE_ANON": f"{LIMIT}/min"})
    assert stack.manage("migrate", "--noinput").returncode == 0
    try:
        stack.start_web()  # two gunicorn workers; its readiness probe spends a request or two
        answers = [get_status(f"{stack.url}/api/v1/tasks/") for _ in range(3 * LIMIT)]
        folder = embedded_cache_dir(tmp_path / "var")
        assert any(folder.iterdir())  # the embedded default holds the counts
    finally:
        stack.stop()
    passed = sum(status == 200 for status, _ in answers)
    throttled = [retry_after for status, retry_after in answers if status == 429]
    # One limit for the whole server: with a cache per worker, up to twice as many would pass.
    assert 1 <= passed <= LIMIT, passed
    assert len(throttled) == len(answers) - passed
    assert all(retry_after and 1 <= int(retry_after) <= 60 for retry_after in throttled)
    assert not folder.exists()  # stop() leaves nothing in shared memory
