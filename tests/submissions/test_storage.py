"""Upload storage (docs/operations.md, "Upload storage"): a file refused at upload is never
stored, a file the worker rejects is deleted (its row and message stay), and `purge_uploads`
removes files of rejected submissions, orphaned uploads and stale temporary upload files,
never a file an upload in flight may still need."""
import os
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from submissions import lifecycle, storage
from submissions.models import Status, Submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, token_for, upload_file

pytestmark = pytest.mark.django_db
HOUR = 3600


@pytest.fixture
def task():
    return make_task("expmrc-squad")


@pytest.fixture
def api():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(make_user())}")
    return client


def submit(api, content, name="predictions.json"):
    return api.post("/api/tasks/expmrc-squad/submissions/",
                    {"file": upload_file(content, name=name), "method_name": "Mine"}, format="multipart")


def stored_files(settings):
    root = Path(settings.MEDIA_ROOT) / storage.UPLOAD_FOLDER
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def age(path, seconds):
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def accepted(api):
    response = submit(api, perfect_predictions(fixture_gold("expmrc-squad")))
    assert response.status_code == 201, response.content
    return Submission.objects.get(pk=response.json()["id"])


def rejected_by_the_worker(submission):
    """What the scoring worker does with a stored file its parser refuses."""
    claimed = lifecycle.start_run(submission.pk)
    assert lifecycle.reject_run(claimed, "invalid entries: line 1: ...")
    return claimed


def test_a_file_refused_at_upload_is_not_stored(api, task, settings):
    response = submit(api, b'{"fx-squad-1": {"answer": 1}}' + b" " * 100_000)
    assert response.status_code == 400, response.content
    row = Submission.objects.get(pk=response.json()["submission_id"])
    assert row.status == Status.REJECTED and row.error_message == response.json()["detail"]
    assert not row.file and stored_files(settings) == []
    assert len(row.sha256) == 64  # still recorded: the researcher can tell which file it was


def test_the_worker_rejecting_a_file_deletes_it_and_keeps_the_row(api, task, settings):
    submission = accepted(api)
    path = Path(submission.file.path)
    size = path.stat().st_size
    assert size > 0
    rejected_by_the_worker(submission)  # lifecycle.reject_run discards the file itself
    assert not path.exists() and stored_files(settings) == []
    row = Submission.objects.get(pk=submission.pk)
    assert row.status == Status.REJECTED and row.file.name == "" and row.error_message
    assert storage.discard_rejected_file(row) == 0  # twice is harmless


def test_discarding_refuses_a_submission_that_is_not_rejected(api, task):
    submission = accepted(api)
    assert storage.discard_rejected_file(submission) == 0
    assert Path(submission.file.path).is_file()
    assert Submission.objects.get(pk=submission.pk).file.name == submission.file.name


def test_purge_deletes_rejected_and_orphaned_files_but_nothing_in_use(api, task, settings):
    kept = accepted(api)  # queued: its file is read by the worker
    # A rejection stored before rejected files were discarded: its row still names the file.
    old = accepted(api)
    rejected_path = Path(old.file.path)
    rejected = rejected_by_the_worker(old)
    rejected_path.write_bytes(b"z" * 500)
    Submission.objects.filter(pk=rejected.pk).update(file=old.file.name)
    folder = Path(kept.file.path).parent
    old_orphan, new_orphan = folder / "died-mid-upload.zip", folder / "upload-in-flight.json"
    for path in (old_orphan, new_orphan):
        path.write_bytes(b"x" * 1000)
    for path in (Path(kept.file.path), rejected_path, old_orphan):
        age(path, 2 * HOUR)
    outside = Path(settings.MEDIA_ROOT) / "elsewhere.bin"  # not below MEDIA_ROOT/submissions
    outside.write_bytes(b"y")
    age(outside, 2 * HOUR)
    link = folder / "link.json"
    link.symlink_to(outside)

    report = storage.purge_rejected_files(older_than=timedelta(hours=1))
    assert (report.rejected_files, report.orphaned_files) == (1, 1)
    assert report.bytes_freed >= 1000
    assert not rejected_path.exists() and not old_orphan.exists()
    assert Path(kept.file.path).is_file() and new_orphan.is_file()  # in use / maybe in flight
    assert outside.is_file() and link.is_symlink()  # links are neither followed nor removed
    assert Submission.objects.get(pk=rejected.pk).file.name == ""
    again = storage.purge_rejected_files()
    assert (again.rejected_files, again.orphaned_files, again.temporary_files) == (0, 0, 0)


def test_purge_deletes_stale_temporary_upload_files_only(settings, tmp_path):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "upload-tmp")
    temp = Path(settings.FILE_UPLOAD_TEMP_DIR)
    temp.mkdir()
    stale, fresh, other = temp / "tmpab12cd.upload.json", temp / "tmpzz99yy.upload.zip", temp / "notes.txt"
    for path in (stale, fresh, other):
        path.write_bytes(b"z" * 10)
    age(stale, 2 * HOUR)
    age(other, 2 * HOUR)
    out = StringIO()
    call_command("purge_uploads", stdout=out)
    assert "1 temporary upload file(s)" in out.getvalue()
    assert not stale.exists() and fresh.exists() and other.exists()


def test_large_uploads_are_spooled_to_the_dedicated_temporary_folder(settings):
    """The settings name a folder under the var directory, so the purge never sweeps /tmp."""
    from django.conf import settings as live
    assert Path(live.FILE_UPLOAD_TEMP_DIR).is_dir()
    assert Path(live.FILE_UPLOAD_TEMP_DIR).parent == Path(live.VAR_DIR)


def test_purge_uploads_refuses_a_grace_period_that_could_catch_uploads_in_flight():
    with pytest.raises(CommandError, match="at least 1"):
        call_command("purge_uploads", "--older-than-minutes", "0")

