"""/healthz (config/health.py): the database, the broker and the cache, each really reached."""
import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

UNREACHABLE_REDIS = "redis://:hunter2-broker-secret@127.0.0.1:1/0"  # nothing listens on port 1


def test_all_reachable_is_a_200_naming_each_check():
    response = Client().get("/healthz")
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok", "cache": "ok"}}
    assert response["X-Request-ID"]


def test_an_unreachable_broker_is_a_503_that_names_it_and_hides_its_url(settings):
    settings.CELERY_BROKER_URL = UNREACHABLE_REDIS
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "failing" and body["failing"] == ["broker"]
    assert body["checks"]["database"] == "ok" and body["checks"]["cache"] == "ok"
    assert body["checks"]["broker"].startswith("failed: ")
    assert "hunter2" not in response.content.decode() and "127.0.0.1" not in response.content.decode()


def test_a_missing_embedded_broker_folder_is_a_503(settings, tmp_path):
    settings.CELERY_BROKER_URL = "filesystem://localhost/"
    settings.CELERY_BROKER_DIR = tmp_path / "gone"
    assert Client().get("/healthz").json()["failing"] == ["broker"]


def test_a_cache_that_cannot_store_is_a_503(settings, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache folder cannot be created under a file")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(blocker / "cache")}}
    response = Client().get("/healthz")
    assert response.status_code == 503 and response.json()["failing"] == ["cache"]


def test_it_answers_before_the_host_check_and_the_https_redirect(settings):
    settings.ALLOWED_HOSTS = ["expbench.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    response = Client(HTTP_HOST="10.0.0.7:8000").get("/healthz")
    assert response.status_code == 200
    assert Client(HTTP_HOST="10.0.0.7:8000").get("/api/v1/tasks/").status_code == 400  # the host check is on


def test_only_reads_are_answered():
    response = Client().post("/healthz")
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"
