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

    settings.MEDIA_ROOT = tmp_path / "media"
    # PBKDF2 with its real work factor costs ~0.2 s per user created or logged in.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()  # API throttle counters live in the cache: each test starts fresh
