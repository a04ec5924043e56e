"""Uploaded files nobody needs, and getting rid of them (docs/operations.md, "Upload storage").

A file refused at upload is never stored (``intake``). A file the worker rejects (status
``rejected``, a terminal status: nothing reads the file again) is deleted by
:func:`discard_rejected_file`; its row and message stay, so the researcher still sees why.
:func:`purge_rejected_files` (``manage.py purge_uploads``) catches up on everything else: files
of rejected submissions, files under ``MEDIA_ROOT/submissions`` that no row names (a worker
killed between writing the file and committing the row), and Django's temporary upload files
that a killed web worker left in ``FILE_UPLOAD_TEMP_DIR``. Files younger than ``older_than``
are never touched by the last two, so an upload in flight keeps its file.
"""
from __future__ import annotations

import fnmatch
import logging
import os
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage

from .models import Status, Submission

log = logging.getLogger(__name__)

# Below MEDIA_ROOT, where ``models.submission_upload_path`` puts every uploaded file.
UPLOAD_FOLDER = "submissions"
# Django's TemporaryUploadedFile names (tempfile, suffix ".upload" plus the file's extension):
# only such files are removed from the temporary folder, whatever else it holds.
TEMPORARY_UPLOAD_PATTERN = "tmp*.upload*"
DEFAULT_GRACE = timedelta(hours=1)


@dataclass
class PurgeReport:
    rejected_files: int = 0
    orphaned_files: int = 0
    temporary_files: int = 0
    bytes_freed: int = 0

    def __str__(self) -> str:
        return (f"{self.rejected_files} file(s) of rejected submissions, {self.orphaned_files} "
                f"orphaned upload(s), {self.temporary_files} temporary upload file(s); "
                f"{self.bytes_freed:,} bytes freed")


def _size(name: str) -> int:
    try:
        return default_storage.size(name)
    except OSError:
        return 0


def discard_rejected_file(submission: Submission) -> int:
    """Delete the stored file of a rejected submission; the row and its message stay. The
    reference is cleared first, with a conditional UPDATE (still rejected, still this file), so
    a row never names a missing file. Returns the bytes freed (0: nothing to do)."""
    name = submission.file.name if submission.file else ""
    if not name:
        return 0
    cleared = Submission.objects.filter(pk=submission.pk, status=Status.REJECTED, file=name).update(file="")
    if not cleared:
        return 0
    submission.file.name = ""
    freed = _size(name)
    try:
        default_storage.delete(name)
    except OSError as error:  # the row no longer names it; the orphan sweep retries later
        log.warning("could not delete %s of rejected submission %s: %s", name, submission.pk, error)
        return 0
    return freed


def _regular_files_older_than(folder: Path, cutoff: float, *, pattern: str | None = None,
                              recursive: bool = True):
    """(path, size) of the regular files below ``folder`` last modified before ``cutoff``;
    symbolic links are neither followed nor returned."""
    if not folder.is_dir():
        return
    for directory, subfolders, names in os.walk(folder, followlinks=False):
        if not recursive:
            subfolders.clear()
        for name in names:
            if pattern is not None and not fnmatch.fnmatch(name, pattern):
                continue
            path = Path(directory) / name
            try:
                status = path.lstat()
            except OSError:
                continue  # deleted meanwhile
            if path.is_symlink() or not path.is_file() or status.st_mtime >= cutoff:
                continue
            yield path, status.st_size


def purge_rejected_files(older_than: timedelta = DEFAULT_GRACE) -> PurgeReport:
    """Delete the files of rejected submissions (all of them: rejection is final), uploaded
    files no row names and temporary upload files, the last two only when last modified more
    than ``older_than`` ago. Safe to run while the site runs; returns what it removed."""
    report = PurgeReport()
    rejected = Submission.objects.filter(status=Status.REJECTED).exclude(file="").only("pk", "file", "status")
    for submission in rejected.iterator():
        freed = discard_rejected_file(submission)
        if not submission.file.name:  # cleared (even when the file itself was already gone)
            report.rejected_files += 1
            report.bytes_freed += freed

    cutoff = time.time() - older_than.total_seconds()
    media_root = Path(settings.MEDIA_ROOT)
    # An upload writes its file and commits its row within one request, so a file older than
    # the cutoff that no row names belongs to a request that died.
    referenced = set(Submission.objects.exclude(file="").values_list("file", flat=True).iterator())
    for path, size in _regular_files_older_than(media_root / UPLOAD_FOLDER, cutoff):
        if path.relative_to(media_root).as_posix() not in referenced and _delete(path, "orphaned upload"):
            report.orphaned_files += 1
            report.bytes_freed += size

    temp_dir = getattr(settings, "FILE_UPLOAD_TEMP_DIR", None)
    if temp_dir:  # never the system's temporary folder: Django falls back to it when unset
        for path, size in _regular_files_older_than(Path(temp_dir), cutoff, pattern=TEMPORARY_UPLOAD_PATTERN,
                                                    recursive=False):
            if _delete(path, "temporary upload"):
                report.temporary_files += 1
                report.bytes_freed += size
    return report


def _delete(path: Path, what: str) -> bool:
    """Delete one file; a failure is logged (the next purge tries again), never raised."""
    try:
        path.unlink()
    except OSError as error:
        log.warning("could not delete %s %s: %s", what, path, error)
        return False
    return True
