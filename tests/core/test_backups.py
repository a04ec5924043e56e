"""manage.py backup / restore (docs/operations.md#backups-and-upgrades): a site restored into a
fresh database and a fresh media folder answers the board API byte for byte as before, keeps
every test set's gold, and an archive that is damaged, unsafe or from a newer schema is refused
before anything is written."""
import hashlib
import io
import json
import tarfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from accounts import teams
from benchmark.models import Phase, ReportedResult
from benchmark.models import TestSet as StoredTestSet
from core import backups
from leaderboards.store import rebuild_all
from submissions.models import ScoreRecord, Status, Submission
from submissions.tasks import score_submission
from tests.factories import (
    FIXTURES,
    api_for,
    fixture_gold,
    make_task,
    make_user,
    perfect_predictions,
    upload_file,
)

SLUGS = ["expmrc-squad", "expmrc-c3"]


def board_urls():
    urls = []
    for slug in SLUGS:
        urls += [f"/api/v1/tasks/{slug}/leaderboard/", f"/api/v1/tasks/{slug}/leaderboard/?sort=system",
                 f"/tasks/{slug}/leaderboard.csv"]
    return urls + ["/api/v1/benchmarks/expmrc/leaderboard/", "/api/v1/tasks/"]


def build_site(settings):
    """Two tasks (one Chinese), two versions of one test set, entries of two users in a team,
    a reported row, a phase, a failed entry: what a benchmark holds."""
    settings.BOOTSTRAP_RESAMPLES = 30
    settings.SUBMISSIONS_PER_DAY = 50
    for slug in SLUGS:
        make_task(slug)
    # A second version of the SQuAD test set: the entries below are scored on it.
    make_task("expmrc-squad", version="v2", path=FIXTURES / "expmrc-squad-dev.json")
    alice, bob = make_user("alice", team="Lighthouse Lab"), make_user("bob", team="")
    team = teams.create_team(alice, "Lighthouse Lab")
    teams.invite(team, alice, "bob")
    teams.accept(bob, team)
    ids = []
    for user in (alice, bob):
        for slug in SLUGS:
            predictions = perfect_predictions(fixture_gold(slug))
            if user is bob:  # a worse system, so the two rows differ
                predictions = dict(list(predictions.items())[: len(predictions) // 2])
            response = api_for(user).post(f"/api/v1/tasks/{slug}/submissions/",
                                          {"file": upload_file(predictions), "method_name": f"{user.username} 系统"},
                                          format="multipart")
            assert response.status_code == 201, response.content
            ids.append(response.json()["id"])
    for pk in ids:
        assert score_submission(pk) == Status.SCORED
    task = StoredTestSet.objects.get(task__slug="expmrc-squad", version="v1").task
    ReportedResult.objects.create(task=task, kind="human", method="Human", source="paper",
                                  scores={"answer_f1": 91.3, "evidence_f1": 92.9, "overall_f1": 84.7})
    now = timezone.now()
    Phase.objects.create(task=task, name="Main", starts_at=now - timedelta(days=30), ends_at=now + timedelta(days=30))
    rebuild_all()
    return ids


def answers():
    client = Client()
    result = {}
    for url in board_urls():
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
        result[url] = response.content
    return result


def gold_by_version():
    return {(ts.task.slug, ts.version): (ts.gold, ts.public_inputs, ts.key_spec)
            for ts in StoredTestSet.objects.select_related("task")}


def media_bytes(root):
    root = Path(root)
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def rewrite(archive, target, *, manifest=None, data=None, extra=None, replace=None):
    """A copy of ``archive`` with its manifest and data edited (the data's SHA-256 kept true,
    unless a member is replaced behind the manifest's back)."""
    with tarfile.open(archive, "r:gz") as source:
        members = {m.name: source.extractfile(m).read() for m in source.getmembers()}
    man = json.loads(members.pop("manifest.json"))
    if data is not None:
        members["data.json"] = json.dumps(data(json.loads(members["data.json"]))).encode()
    for name, content in (extra or {}).items():
        members[name] = content
    for name, content in members.items():
        man["files"][name] = {"sha256": hashlib.sha256(content).hexdigest(), "bytes": len(content)}
    for name, content in (replace or {}).items():
        members[name] = content
    if manifest is not None:
        manifest(man)
    with tarfile.open(target, "w:gz") as out:
        for name, content in [("manifest.json", json.dumps(man).encode()), *members.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            out.addfile(info, io.BytesIO(content))
    return target


@pytest.fixture
def backed_up(settings, tmp_path):
    ids = build_site(settings)
    before = {"answers": answers(), "gold": gold_by_version(), "media": media_bytes(settings.MEDIA_ROOT),
              "history": ScoreRecord.objects.count()}
    assert before["media"] and before["history"] >= len(ids)
    archive = tmp_path / "site.tar.gz"
    call_command("backup", str(archive), stdout=io.StringIO())
    return archive, before


@pytest.mark.django_db(transaction=True)
def test_a_restored_site_answers_byte_for_byte_and_keeps_its_gold(backed_up, settings, tmp_path):
    archive, before = backed_up
    assert archive.stat().st_mode & 0o077 == 0  # holds gold and password hashes
    with tarfile.open(archive, "r:gz") as tar:
        names = tar.getnames()
    assert names[0] == "manifest.json" and "data.json" in names
    assert not any(name.startswith("media/inputs/") for name in names)

    call_command("flush", interactive=False, verbosity=0)  # a fresh database...
    settings.MEDIA_ROOT = tmp_path / "fresh-media"  # ...and a fresh media folder
    cache.clear()
    out = io.StringIO()
    call_command("restore", str(archive), stdout=out)
    assert "restored" in out.getvalue()

    assert answers() == before["answers"]
    assert gold_by_version() == before["gold"]
    assert media_bytes(settings.MEDIA_ROOT) == before["media"]
    assert ScoreRecord.objects.count() == before["history"]
    assert Submission.objects.get(method_name="alice 系统", task__slug="expmrc-c3").user.profile.team == "Lighthouse Lab"
    # Times are kept to the microsecond: boards computed again from the restored rows are the same.
    rebuild_all()
    assert answers() == before["answers"]
    # The restored site goes on: ids continue after the restored ones.
    bob = Submission.objects.filter(user__username="bob").first().user
    response = api_for(bob).post("/api/v1/tasks/expmrc-squad/submissions/",
                                 {"file": upload_file(perfect_predictions(fixture_gold("expmrc-squad"))),
                                  "method_name": "After restore"}, format="multipart")
    assert response.status_code == 201, response.content
    assert response.json()["id"] > max(Submission.objects.exclude(method_name="After restore").values_list("pk", flat=True))


@pytest.mark.django_db(transaction=True)
def test_restore_refuses_a_database_that_holds_data(backed_up, settings, tmp_path):
    archive, _ = backed_up
    settings.MEDIA_ROOT = tmp_path / "fresh-media"
    with pytest.raises(CommandError, match="already holds data"):
        call_command("restore", str(archive), stdout=io.StringIO())
    assert not (tmp_path / "fresh-media").exists()


@pytest.mark.django_db(transaction=True)
def test_refusals_change_nothing(backed_up, settings, tmp_path):
    archive, _ = backed_up
    call_command("flush", interactive=False, verbosity=0)
    settings.MEDIA_ROOT = tmp_path / "fresh-media"

    def future(manifest):
        manifest["migrations"]["benchmark"].append("0999_from_a_later_release")
        manifest["expbench_version"] = "9.0.0"

    refused = {
        "newer database schema than this code knows": rewrite(archive, tmp_path / "newer.tar.gz", manifest=future),
        "written by a newer ExpBench": rewrite(archive, tmp_path / "format.tar.gz",
                                               manifest=lambda m: m.update(format_version=backups.FORMAT_VERSION + 1)),
        "does not match its SHA-256": rewrite(archive, tmp_path / "damaged.tar.gz", replace={"data.json": b"[]"}),
        "unsafe name": rewrite(archive, tmp_path / "escape.tar.gz", extra={"media/../../escaped": b"x"}),
    }
    for message, path in refused.items():
        with pytest.raises(CommandError, match=message):
            call_command("restore", str(path), stdout=io.StringIO())
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "fresh-media").exists()
    assert not StoredTestSet.objects.exists()
    # --check reads and verifies only.
    out = io.StringIO()
    call_command("restore", "--check", str(archive), stdout=out)
    assert "matches its manifest" in out.getvalue() and not StoredTestSet.objects.exists()


def test_member_names_stay_inside_the_folder():
    assert backups.safe_member_name("media/submissions/1/a.json")
    for name in ("", "/etc/passwd", "media/../../x", "media//x", "./x", "media\\..\\x", "a/."):
        assert not backups.safe_member_name(name), name
