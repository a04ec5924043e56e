"""Host safety: the web process needs explicit host names, a forged Host header is refused, and
e-mailed links name SITE_URL whatever Host the request came with (config/hosts.py)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from config.hosts import refuse_unsafe_hosts, unsafe_hosts_reason
from tests.factories import make_user

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("debug", "production", "hosts", "refused"), [
    (False, False, [], True),
    (False, False, ["expbench.example.org"], False),
    (False, False, ["*"], False),  # said explicitly, outside production
    (False, True, ["*"], True),
    (False, True, ["expbench.example.org"], False),
    (True, False, [], False),  # Django then accepts the localhost names only
])
def test_which_host_settings_may_serve(debug, production, hosts, refused):
    reason = unsafe_hosts_reason(debug=debug, production=production, allowed_hosts=hosts)
    assert (reason is not None) is refused


def test_the_check_reads_the_settings(settings):
    settings.DEBUG, settings.ALLOWED_HOSTS = False, []
    with pytest.raises(ImproperlyConfigured, match="ALLOWED_HOSTS is not set"):
        refuse_unsafe_hosts()
    settings.ALLOWED_HOSTS = ["expbench.example.org"]
    refuse_unsafe_hosts()


def wsgi_process(tmp_path, **env):
    environ = {k: v for k, v in os.environ.items() if k not in ("ALLOWED_HOSTS", "DEBUG", "EXPBENCH_ENV")}
    environ.update(EXPBENCH_VAR_DIR=str(tmp_path / "var"), SECRET_KEY="x" * 50, **env)
    return subprocess.run([sys.executable, "-c", "import config.wsgi"], cwd=REPO, env=environ,
                          capture_output=True, text=True, timeout=120)


def test_the_wsgi_application_refuses_to_start_without_allowed_hosts(tmp_path):
    refused = wsgi_process(tmp_path)
    assert refused.returncode != 0
    assert "ImproperlyConfigured: ALLOWED_HOSTS is not set" in refused.stderr


def test_a_bad_site_url_is_refused_with_its_value(tmp_path):
    refused = wsgi_process(tmp_path, ALLOWED_HOSTS="expbench.example.org", SITE_URL="expbench.example.org/x")
    assert refused.returncode != 0 and "SITE_URL must look like" in refused.stderr


@pytest.mark.django_db
def test_a_forged_host_header_is_refused(settings):
    settings.ALLOWED_HOSTS = ["expbench.example.org"]
    assert Client().get("/", HTTP_HOST="expbench.example.org").status_code == 200
    assert Client().get("/", HTTP_HOST="attacker.example").status_code == 400
    assert Client().get("/accounts/password/reset/", HTTP_HOST="attacker.example").status_code == 400


@pytest.mark.django_db
def test_the_reset_link_names_site_url_not_the_host_header(settings):
    # Even where the host check lets any name through (ALLOWED_HOSTS=* said explicitly, or a
    # proxy that forwards any Host), the e-mailed link points to the configured site.
    settings.ALLOWED_HOSTS = ["*"]
    settings.SITE_URL = "https://bench.example.org"
    user = make_user("alice")
    user.email = "alice@example.org"
    user.save()
    response = Client().post("/accounts/password/reset/", {"email": "alice@example.org"},
                             HTTP_HOST="attacker.example", HTTP_X_FORWARDED_HOST="attacker.example")
    assert response.status_code == 302
    [message] = mail.outbox
    assert "attacker.example" not in message.body
    assert re.search(r"https://bench\.example\.org/accounts/password/reset/[^/\s]+/[^/\s]+/", message.body)
