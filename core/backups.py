"""Backups of a whole site and their restore (``manage.py backup`` / ``manage.py restore``,
docs/operations.md#backups-and-upgrades).

An archive is a gzipped tar file:

* ``manifest.json`` first: the archive format, the ExpBench and Django versions that wrote it,
  the database vendor, every migration the database had applied (its schema), the number of
  rows per model, and the size and SHA-256 of every other member;
* ``data.json``: the rows of the product's apps and of the accounts behind them, in Django's
  serialization format (``loaddata`` reads it), times to the microsecond (core.backup_json):
  users and their API tokens, profiles and teams, benchmarks, tasks, every test-set version with
  its gold and public inputs, phases, reported rows, QUACKIE sets and tracks, submissions with
  their scores, per-item results and score history, the stored boards;
* ``media/...``: the files under ``MEDIA_ROOT`` (uploaded predictions, code and model bundles,
  baseline runs), except the inputs downloads and CSV exports, which are rebuilt from the database.

Content types and permissions are not in it: ``migrate`` creates them, and rows refer to them
by natural key. The archive holds hidden gold and password hashes: it is a maintainer's file,
written with mode 0600, and no route serves it.

A restore reads and checks the whole archive before it changes anything, refuses an archive
from a newer schema than the code knows, and writes only into an empty database: it migrates
that database to the archive's schema, loads the rows, then migrates to the code's schema (so
a backup of an older release is upgraded by the same migrations as a live site).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

import django
from django.apps import apps
from django.conf import settings
from django.core import serializers
from django.core.cache import cache
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connections, models, transaction
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from . import backup_json

ARCHIVE_FORMAT = "expbench-backup"
#: The archive layout this code writes and the newest it reads.
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
DATA_NAME = "data.json"
MEDIA_PREFIX = "media/"
#: Folders of MEDIA_ROOT left out: caches the site rebuilds from the database.
MEDIA_CACHES = frozenset({"inputs", "exports"})
#: What is dumped: whole apps by label, or single models as ``app.model``.
DUMPED = ("auth.user", "auth.group", "authtoken", "admin.logentry",
          "accounts", "benchmark", "submissions", "leaderboards")
CHUNK = 1 << 20

serializers.register_serializer(backup_json.FORMAT_NAME, "core.backup_json")


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says why and what to do."""


@dataclass
class Archive:
    """A checked archive unpacked in ``folder``: its manifest, the data file and media files."""

    manifest: dict[str, Any]
    folder: Path
    media: list[str] = field(default_factory=list)

    @property
    def data_path(self) -> Path:
        return self.folder / DATA_NAME

    def media_path(self, name: str) -> Path:
        return self.folder / name


@dataclass
class RestoreReport:
    rows: int
    files: int
    migrated: list[str]


def product_version() -> str:
    try:
        with open(Path(settings.BASE_DIR) / "pyproject.toml", "rb") as file:
            return str(tomllib.load(file)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def dumped_models() -> list[type[models.Model]]:
    """The models written to an archive, each after the models its natural keys refer to."""
    chosen: dict[str, list[type[models.Model]]] = {}
    for label in DUMPED:
        app_label, _, model_name = label.partition(".")
        if model_name:
            app_models = [apps.get_model(app_label, model_name)]
        else:
            app_models = list(apps.get_app_config(app_label).get_models())
        chosen.setdefault(app_label, []).extend(model for model in app_models
                                                if model._meta.managed and not model._meta.proxy)
    return serializers.sort_dependencies([(apps.get_app_config(label), group) for label, group in chosen.items()],
                                         allow_cycles=True)


def applied_migrations(database: str = DEFAULT_DB_ALIAS) -> dict[str, list[str]]:
    applied: dict[str, list[str]] = {}
    for app_label, name in MigrationRecorder(connections[database]).applied_migrations():
        applied.setdefault(app_label, []).append(name)
    return {label: sorted(names) for label, names in sorted(applied.items())}


def sha256_of(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as file:
        while chunk := file.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def media_files(root: Path) -> list[tuple[str, Path]]:
    """(archive name, path) of every regular file under MEDIA_ROOT outside the caches; links
    are not followed."""
    found: list[tuple[str, Path]] = []
    if not root.is_dir():
        return found
    for folder, dirnames, filenames in os.walk(root):
        relative_folder = Path(folder).relative_to(root)
        if relative_folder == Path("."):
            dirnames[:] = [name for name in dirnames if name not in MEDIA_CACHES]
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                found.append((MEDIA_PREFIX + (relative_folder / name).as_posix(), path))
    return found


@transaction.atomic
def _dump_rows(path: Path, database: str) -> tuple[dict[str, int], dict[str, list[str]]]:
    """The rows of every dumped model and the schema, read in one transaction: on PostgreSQL a
    read-only snapshot, so entries scored meanwhile are either wholly in or wholly out; on
    SQLite the transaction holds the write lock (IMMEDIATE) and writers wait for the dump."""
    connection = connections[database]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    counts: dict[str, int] = {}

    def rows() -> Iterator[models.Model]:
        for model in dumped_models():
            counts[model._meta.label_lower] = 0
            for row in model._base_manager.using(database).order_by(model._meta.pk.attname).iterator(chunk_size=200):
                counts[model._meta.label_lower] += 1
                yield row

    with open(path, "w", encoding="utf-8") as stream:
        serializers.serialize(backup_json.FORMAT_NAME, rows(), stream=stream, indent=None,
                              use_natural_foreign_keys=True, use_natural_primary_keys=False)
    return counts, applied_migrations(database)


def _add_file(archive: tarfile.TarFile, name: str, path: Path, expected_sha256: str) -> None:
    with open(path, "rb") as file:
        content = file.read()
    if hashlib.sha256(content).hexdigest() != expected_sha256:
        raise BackupError(f"{path} changed while the backup ran; run the backup again")
    _add_bytes(archive, name, content)


def _add_bytes(archive: tarfile.TarFile, name: str, content: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    info.mode = 0o600
    info.mtime = int(timezone.now().timestamp())
    archive.addfile(info, _BytesReader(content))


class _BytesReader:
    """A file-like reader over bytes for ``TarFile.addfile``."""

    def __init__(self, content: bytes) -> None:
        self.content, self.offset = content, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.content) if size < 0 else self.offset + size
        chunk = self.content[self.offset:end]
        self.offset += len(chunk)
        return chunk


def write_backup(destination: Path, database: str = DEFAULT_DB_ALIAS) -> dict[str, Any]:
    """Write an archive of the site to ``destination`` (replaced atomically) and return its
    manifest."""
    destination = destination.resolve()
    destination.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="expbench-backup-") as scratch:
        data_path = Path(scratch) / DATA_NAME
        counts, migrations = _dump_rows(data_path, database)
        data_sha, data_size = sha256_of(data_path)
        files: dict[str, dict[str, Any]] = {DATA_NAME: {"sha256": data_sha, "bytes": data_size}}
        media = media_files(Path(settings.MEDIA_ROOT))
        for name, path in media:
            digest, size = sha256_of(path)
            files[name] = {"sha256": digest, "bytes": size}
        manifest = {
            "format": ARCHIVE_FORMAT,
            "format_version": FORMAT_VERSION,
            "created_at": timezone.now().isoformat(),
            "expbench_version": product_version(),
            "django_version": django.get_version(),
            "database": connections[database].vendor,
            "migrations": migrations,
            "rows": counts,
            "files": files,
        }
        partial = destination.with_name(f".{destination.name}.partial")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
                _add_bytes(archive, MANIFEST_NAME, json.dumps(manifest, indent=1, sort_keys=True).encode())
                archive.add(data_path, arcname=DATA_NAME, filter=_private)
                for name, path in media:
                    _add_file(archive, name, path, files[name]["sha256"])
            os.replace(partial, destination)
        finally:
            partial.unlink(missing_ok=True)
    return manifest


def _private(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mode, info.uid, info.gid, info.uname, info.gname = 0o600, 0, 0, "", ""
    return info


# ---------------------------------------------------------------------------------- reading


def safe_member_name(name: str) -> bool:
    """A relative POSIX path without ``..``, empty or ``.`` parts: it stays inside the folder
    it is unpacked in."""
    path = PurePosixPath(name)
    return (bool(name) and not path.is_absolute() and "\\" not in name and "\0" not in name
            and all(part not in ("", ".", "..") for part in name.split("/")))


def _read_manifest(member: tarfile.TarInfo | None, archive: tarfile.TarFile) -> dict[str, Any]:
    if member is None or member.name != MANIFEST_NAME or not member.isfile():
        raise BackupError(f"not an ExpBench backup: its first member is not {MANIFEST_NAME}")
    handle = archive.extractfile(member)
    if handle is None or member.size > 64 * CHUNK:
        raise BackupError(f"not an ExpBench backup: unreadable {MANIFEST_NAME}")
    try:
        manifest = json.loads(handle.read())
    except ValueError as error:
        raise BackupError(f"not an ExpBench backup: {MANIFEST_NAME} is not JSON ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
        raise BackupError(f"not an ExpBench backup: {MANIFEST_NAME} does not name the format {ARCHIVE_FORMAT!r}")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise BackupError(f"not an ExpBench backup: format_version {version!r}")
    if version > FORMAT_VERSION:
        raise BackupError(f"this archive was written by a newer ExpBench (archive format {version}, release "
                          f"{manifest.get('expbench_version', 'unknown')}); this release ({product_version()}) "
                          f"reads format {FORMAT_VERSION} at most. Install that release or a later one, then restore.")
    files, migrations = manifest.get("files"), manifest.get("migrations")
    if (not isinstance(files, dict) or DATA_NAME not in files or not isinstance(migrations, dict)
            or not all(isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
                       and isinstance(entry.get("bytes"), int) for entry in files.values())
            or not all(isinstance(names, list) for names in migrations.values())):
        raise BackupError(f"not an ExpBench backup: {MANIFEST_NAME} lacks its file list or schema")
    return manifest


def unknown_migrations(manifest: dict[str, Any]) -> list[str]:
    """The archive's applied migrations that this code does not have: a newer schema."""
    known = set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
    return sorted(f"{app_label} {name}" for app_label, names in manifest["migrations"].items()
                  for name in names if (app_label, name) not in known)


def check_schema(manifest: dict[str, Any]) -> None:
    unknown = unknown_migrations(manifest)
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise BackupError(
            f"this archive comes from a newer database schema than this code knows (migrations {shown}; "
            f"written by ExpBench {manifest.get('expbench_version', 'unknown')}, this is {product_version()}). "
            "Restoring it here would lose or misread data: upgrade the code to that release or a later one, "
            "then restore.")


def _unpack_member(archive: tarfile.TarFile, member: tarfile.TarInfo, expected: dict[str, Any], target: Path) -> None:
    handle = archive.extractfile(member)
    if handle is None:
        raise BackupError(f"archive member {member.name} cannot be read")
    target.parent.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    with open(target, "wb") as out:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            if size > expected["bytes"]:
                break
            out.write(chunk)
    if size != expected["bytes"] or digest.hexdigest() != expected["sha256"]:
        raise BackupError(f"archive member {member.name} does not match its SHA-256 in the manifest: "
                          "the archive is damaged")


def read_archive(path: Path, folder: Path) -> Archive:
    """Check and unpack the archive at ``path`` into ``folder``: the manifest's format and
    schema, then every member against its size and SHA-256. Nothing outside ``folder`` is
    written, whatever the member names say."""
    try:
        archive = tarfile.open(path, mode="r:gz")
    except (OSError, tarfile.TarError) as error:
        raise BackupError(f"cannot read {path}: {error}") from None
    with archive:
        try:
            manifest = _read_manifest(archive.next(), archive)
            check_schema(manifest)
            expected: dict[str, dict[str, Any]] = manifest["files"]
            seen: set[str] = set()
            for member in iter(archive.next, None):
                name = member.name
                if not safe_member_name(name):
                    raise BackupError(f"archive member {name!r} has an unsafe name (absolute, or with '..')")
                if name not in expected or name in seen:
                    raise BackupError(f"archive member {name!r} is not in its manifest (or appears twice)")
                if not member.isfile():
                    raise BackupError(f"archive member {name!r} is not a regular file")
                _unpack_member(archive, member, expected[name], folder / name)
                seen.add(name)
        except (OSError, tarfile.TarError, EOFError) as error:
            raise BackupError(f"cannot read {path}: {error}") from None
    missing = sorted(set(expected) - seen)
    if missing:
        raise BackupError(f"the archive lacks {len(missing)} file(s) its manifest lists, e.g. {missing[0]}: "
                          "it is damaged or cut short")
    return Archive(manifest, folder, sorted(name for name in seen if name.startswith(MEDIA_PREFIX)))


# ---------------------------------------------------------------------------------- restoring


def rows_present(database: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Dumped models that already have rows in the database (tables that do not exist yet are
    empty)."""
    tables = set(connections[database].introspection.table_names())
    return [model._meta.label for model in dumped_models()
            if model._meta.db_table in tables and model._base_manager.using(database).exists()]


def media_conflicts(archive: Archive, media_root: Path) -> list[str]:
    conflicts = []
    for name in archive.media:
        target = media_root / name[len(MEDIA_PREFIX):]
        if target.exists() and (not target.is_file()
                                or sha256_of(target)[0] != archive.manifest["files"][name]["sha256"]):
            conflicts.append(str(target))
    return conflicts


def migration_targets(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """Per app, the archive's last applied migrations (those no other applied one of the same
    app depends on)."""
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    targets = []
    for app_label, names in manifest["migrations"].items():
        applied = {(app_label, name) for name in names}
        for node in sorted(applied):
            if node in graph.nodes and not any(child.key in applied for child in graph.node_map[node].children):
                targets.append(node)
    return targets


def restore(archive: Archive, database: str = DEFAULT_DB_ALIAS, stdout: IO[str] | None = None) -> RestoreReport:
    """Load a checked archive into an empty database and MEDIA_ROOT."""
    media_root = Path(settings.MEDIA_ROOT)
    present = rows_present(database)
    if present:
        shown = ", ".join(present[:4]) + (", ..." if len(present) > 4 else "")
        raise BackupError(f"the database already holds data ({shown}): "
                          "restore only into an empty database (a new one, or emptied with `manage.py flush`)")
    conflicts = media_conflicts(archive, media_root)
    if conflicts:
        raise BackupError(f"{len(conflicts)} file(s) in MEDIA_ROOT differ from the archive's, e.g. {conflicts[0]}: "
                          "restore into an empty media folder")
    quiet = {"verbosity": 0, "interactive": False, "database": database}
    for app_label, name in migration_targets(archive.manifest):
        call_command("migrate", app_label, name, **quiet)
    before = {(app_label, name) for app_label, names in applied_migrations(database).items() for name in names}
    call_command("loaddata", str(archive.data_path), **{k: v for k, v in quiet.items() if k != "interactive"})
    call_command("migrate", **quiet)
    after = applied_migrations(database)
    migrated = sorted(f"{app_label} {name}" for app_label, names in after.items() for name in names
                      if (app_label, name) not in before)
    for name in archive.media:
        target = media_root / name[len(MEDIA_PREFIX):]
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(archive.media_path(name), target)
    # Pages and tiers cached from whatever this site held before describe other data.
    cache.clear()
    rows = sum(int(count) for count in archive.manifest.get("rows", {}).values())
    return RestoreReport(rows=rows, files=len(archive.media), migrated=migrated)


def staging_folder(media_root: Path) -> Path:
    """A private scratch folder beside MEDIA_ROOT (the same file system, so files move in by
    rename)."""
    parent = media_root.parent
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".expbench-restore-", dir=parent))


def describe(manifest: dict[str, Any]) -> Iterable[str]:
    rows = manifest.get("rows", {})
    yield (f"ExpBench {manifest.get('expbench_version')} backup of {manifest.get('created_at')} "
           f"({manifest.get('database')}, archive format {manifest.get('format_version')})")
    for label in ("benchmark.task", "benchmark.testset", "submissions.submission", "submissions.scorerecord",
                  "auth.user", "accounts.team"):
        yield f"  {label}: {rows.get(label, 0)}"
    yield f"  files: {sum(1 for name in manifest['files'] if name.startswith(MEDIA_PREFIX))}"

