"""EXPBENCH_ENV=production (config/settings.py): `manage.py check --deploy` is clean, and each
HTTPS setting can still be set from the environment."""
import os
import runpy
import secrets
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

SETTINGS = str(django_settings.BASE_DIR / "config" / "settings.py")
# Variables a developer's shell (or the test command) may set that production would not.
CLEARED = ("DEBUG", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
           "SECURE_HSTS_PRELOAD", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_PROXY_SSL_HEADER")


def production_environment(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    return {**env, "EXPBENCH_ENV": "production", "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "expbench.example.org", "EXPBENCH_VAR_DIR": str(tmp_path / "var"),
            "DJANGO_SETTINGS_MODULE": "config.settings", **extra}


def test_check_deploy_is_clean_in_production(tmp_path):
    done = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          env=production_environment(tmp_path), cwd=django_settings.BASE_DIR,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


def settings_with(monkeypatch, tmp_path, **env):
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    for name, value in production_environment(tmp_path, **env).items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(SETTINGS)


def test_production_turns_https_on(monkeypatch, tmp_path):
    conf = settings_with(monkeypatch, tmp_path)
    assert conf["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert conf["SECURE_SSL_REDIRECT"] and conf["SESSION_COOKIE_SECURE"] and conf["CSRF_COOKIE_SECURE"]
    assert conf["SECURE_HSTS_SECONDS"] == 365 * 24 * 3600 and conf["SECURE_HSTS_INCLUDE_SUBDOMAINS"]


def test_each_https_setting_comes_from_the_environment(monkeypatch, tmp_path):
    conf = settings_with(monkeypatch, tmp_path, SECURE_PROXY_SSL_HEADER="X-Scheme: https", SECURE_HSTS_SECONDS="60",
                         SECURE_HSTS_PRELOAD="0", SECURE_SSL_REDIRECT="false")
    assert conf["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_SCHEME", "https")
    assert conf["SECURE_HSTS_SECONDS"] == 60 and not conf["SECURE_HSTS_PRELOAD"] and not conf["SECURE_SSL_REDIRECT"]
    with pytest.raises(ImproperlyConfigured, match="SECURE_PROXY_SSL_HEADER"):
        settings_with(monkeypatch, tmp_path, SECURE_PROXY_SSL_HEADER="https")


def test_production_refuses_to_start_without_a_secret_key(monkeypatch, tmp_path):
    monkeypatch.setenv("EXPBENCH_ENV", "production")
    monkeypatch.setenv("EXPBENCH_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.delenv("SECRET_KEY", raising=False)
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        runpy.run_path(SETTINGS)


def test_development_keeps_plain_http(monkeypatch, tmp_path):
    for name in (*CLEARED, "EXPBENCH_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EXPBENCH_VAR_DIR", str(tmp_path / "var"))
    conf = runpy.run_path(SETTINGS)
    assert not conf["SECURE_SSL_REDIRECT"] and conf["SECURE_HSTS_SECONDS"] == 0 and not conf["SESSION_COOKIE_SECURE"]
    assert "SECURE_PROXY_SSL_HEADER" not in conf
