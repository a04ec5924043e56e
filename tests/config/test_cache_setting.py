"""CACHE_URL (config/settings.py): every process of a deployment must share one cache."""
import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from config.settings import cache_from_url


def test_the_default_is_a_file_cache_under_var_that_every_process_shares():
    default = cache_from_url("")
    assert default["BACKEND"].endswith("FileBasedCache")
    assert default["LOCATION"] == str(settings.VAR_DIR / "cache")


def test_redis_file_and_locmem_urls():
    assert cache_from_url("redis://127.0.0.1:6379/1") == {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:6379/1"}
    assert cache_from_url("file:///srv/cache")["LOCATION"] == "/srv/cache"
    assert cache_from_url("locmem://")["BACKEND"].endswith("LocMemCache")


def test_an_unknown_scheme_is_a_clear_configuration_error():
    with pytest.raises(ImproperlyConfigured, match="CACHE_URL"):
        cache_from_url("memcached://127.0.0.1:11211")
