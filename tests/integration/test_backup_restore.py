"""Backups restored by ``manage.py restore`` in processes of their own, into databases that have
no tables yet: a new SQLite file, and a new PostgreSQL database (a move from SQLite to
PostgreSQL is a backup and a restore). The restored site answers the board API byte for byte as
the original and holds the same gold. The SQLite case restores an archive of the schema before
the latest submissions migration: the restore upgrades it with that migration."""
import base64
import json
import os
import subprocess
import sys
import uuid

import pytest
from django.core.management import call_command

from scoring.metrics import expmrc
from submissions.models import ErrorCategory, Status, Submission
from submissions.tasks import score_submission
from tests.core.test_backups import answers, board_urls, build_site, gold_by_version, media_bytes, rewrite
from tests.factories import api_for, fixture_gold, perfect_predictions, upload_file

from .stack import REPO, reachable

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Prints what the restored site answers and holds, as JSON (bytes in base64).
READ_BACK = f"""
import base64, json
from django.test import Client
from django.test.utils import setup_test_environment
from benchmark.models import TestSet
from submissions.models import Submission
setup_test_environment()
client = Client()
answers = {{url: base64.b64encode(client.get(url).content).decode() for url in {board_urls()!r}}}
gold = [[ts.task.slug, ts.version, ts.gold, ts.public_inputs, ts.key_spec] for ts in TestSet.objects.all()]
categories = sorted(Submission.objects.exclude(error_category="").values_list("error_category", flat=True))
print(json.dumps({{"answers": answers, "gold": gold, "categories": categories}}))
"""


def manage(env, *args):
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def restored(tmp_path, archive, database_url):
    env = {**os.environ, "DATABASE_URL": database_url, "MEDIA_ROOT": str(tmp_path / "media"),
           "EXPBENCH_VAR_DIR": str(tmp_path / "var"), "CACHE_URL": "locmem://", "SECRET_KEY": "restore-test",
           "ALLOWED_HOSTS": "testserver", "DJANGO_SETTINGS_MODULE": "config.settings"}
    out = manage(env, "restore", str(archive))
    read = json.loads(manage(env, "shell", "-c", READ_BACK).strip().splitlines()[-1])
    read["answers"] = {url: base64.b64decode(body) for url, body in read["answers"].items()}
    read["gold"] = {(slug, version): (gold, inputs, key_spec) for slug, version, gold, inputs, key_spec in read["gold"]}
    return out, read, media_bytes(tmp_path / "media")


@pytest.fixture
def original(settings, tmp_path, monkeypatch):
    build_site(settings)
    # A failed entry: its category is the one the latest submissions migration rewrites.
    response = api_for(Submission.objects.first().user).post(
        "/api/v1/tasks/expmrc-squad/submissions/",
        {"file": upload_file(perfect_predictions(fixture_gold("expmrc-squad"))), "method_name": "Crashes"},
        format="multipart")
    with monkeypatch.context() as patch:
        patch.setattr(expmrc, "score_predictions", lambda gold, predictions: 1 / 0)
        score_submission(response.json()["id"])
    assert Submission.objects.get(pk=response.json()["id"]).status == Status.FAILED
    archive = tmp_path / "site.tar.gz"
    call_command("backup", str(archive), verbosity=0)
    return archive, {"answers": answers(), "gold": gold_by_version(), "media": media_bytes(settings.MEDIA_ROOT)}


def test_restore_into_a_new_sqlite_file_upgrades_an_older_archive(original, tmp_path):
    archive, before = original

    def older_schema(manifest):
        manifest["migrations"]["submissions"].remove("0015_drop_test_set_gone_category")

    def old_category(rows):
        for row in rows:
            if row["model"] == "submissions.submission" and row["fields"]["error_category"]:
                row["fields"]["error_category"] = "test_set_gone"
        return rows

    older = rewrite(archive, tmp_path / "older.tar.gz", manifest=older_schema, data=old_category)
    out, read, media = restored(tmp_path / "sqlite", older, f"sqlite:///{tmp_path / 'fresh.sqlite3'}")
    assert "applied 1 migration(s) newer than the archive" in out and "rebuild_boards" in out
    assert read["answers"] == before["answers"]
    assert read["gold"] == before["gold"]
    assert media == before["media"]
    assert read["categories"] == [ErrorCategory.SCORER_ERROR]


def test_restore_from_sqlite_into_a_new_postgresql_database(original, tmp_path):
    if not reachable("127.0.0.1", 5432):
        pytest.skip("PostgreSQL not reachable on 127.0.0.1:5432")
    import psycopg

    archive, before = original
    name = f"expbench_restore_{uuid.uuid4().hex[:8]}"
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        out, read, media = restored(tmp_path / "pg", archive, f"postgres://postgres@127.0.0.1:5432/{name}")
    finally:
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    assert "newer than the archive" not in out
    assert read["answers"] == before["answers"]
    assert read["gold"] == before["gold"]
    assert media == before["media"]
