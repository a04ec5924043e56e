"""CACHE_URL (config/settings.py): every process of a deployment must share one cache."""
import stat

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from config.settings import cache_from_url, embedded_cache_dir


def test_the_default_is_a_file_cache_that_every_process_of_the_deployment_shares():
    default = cache_from_url("")
    assert default["BACKEND"] == "config.file_cache.SharedFileCache"
    assert default["LOCATION"] == str(embedded_cache_dir(settings.VAR_DIR))
    assert cache_from_url("")["LOCATION"] == default["LOCATION"]  # every process finds the same folder


def test_the_embedded_cache_lives_in_a_private_folder_in_shared_memory(tmp_path):
    memory = tmp_path / "shm"
    memory.mkdir()
    folder = embedded_cache_dir(tmp_path / "var", memory)
    assert folder.parent == memory and folder.is_dir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert embedded_cache_dir(tmp_path / "var", memory) == folder
    assert embedded_cache_dir(tmp_path / "other-var", memory) != folder  # another deployment, another cache


def test_a_folder_others_can_write_to_is_not_used(tmp_path):
    # The cache holds pickles: a folder someone else prepared under our name would let them run code.
    memory = tmp_path / "shm"
    memory.mkdir()
    folder = embedded_cache_dir(tmp_path / "var", memory)
    folder.chmod(0o777)
    assert embedded_cache_dir(tmp_path / "var", memory) == tmp_path / "var" / "cache"
    folder.rmdir()
    folder.symlink_to(tmp_path)  # a link planted in its place is not followed either
    assert embedded_cache_dir(tmp_path / "var", memory) == tmp_path / "var" / "cache"


def test_without_shared_memory_the_cache_is_under_var(tmp_path):
    assert embedded_cache_dir(tmp_path / "var", tmp_path / "no-such-dir") == tmp_path / "var" / "cache"


def test_redis_file_and_locmem_urls():
    assert cache_from_url("redis://127.0.0.1:6379/1") == {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:6379/1"}
    assert cache_from_url("file:///srv/cache")["LOCATION"] == "/srv/cache"
    assert cache_from_url("locmem://")["BACKEND"].endswith("LocMemCache")


def test_an_unknown_scheme_is_a_clear_configuration_error():
    with pytest.raises(ImproperlyConfigured, match="CACHE_URL"):
        cache_from_url("memcached://127.0.0.1:11211")


def test_the_file_cache_still_culls_when_it_counts_less_often(tmp_path):
    import random

    from config.file_cache import CULL_CHECK_EVERY, SharedFileCache

    random.seed(1)
    cache = SharedFileCache(str(tmp_path / "cache"), {"OPTIONS": {"MAX_ENTRIES": 20, "CULL_FREQUENCY": 2}})
    sizes = []
    for i in range(600):
        cache.set(f"key-{i}", i)
        sizes.append(len(list((tmp_path / "cache").iterdir())))
    # Never more than the limit plus the writes between two counts (a few times CULL_CHECK_EVERY).
    assert max(sizes) < 20 + 6 * CULL_CHECK_EVERY
    assert sizes[-1] < 600 and cache.get("key-599") == 599
