"""Every model a maintainer works with is in the admin: hosted models, QUACKIE tracks, interpretation
sets and skill variants open (list and change pages) without loading or rendering their large JSON
columns (gold, samples, inclusion flags, public inputs); tasks show and filter their visibility and
ranking rule."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark import quackie_tracks
from benchmark.models import HostedModel, InterpretationSet, SkillVariant, Task, Track
from benchmark.models import TestSet as StoredTestSet  # not "Test*": pytest would try to collect it
from core.jobs import JobStatus
from tests.factories import QUACKIE_SQUAD_V2, make_task

pytestmark = pytest.mark.django_db

SENTINEL = "GOLD-SENTINEL-7f3a"  # stored in every large column; no page may show it
LARGE_COLUMNS = ('"samples"', '"inclusion"', '"gold"', '"public_inputs"')


@pytest.fixture
def objects(tmp_path):
    iset, _ = quackie_tracks.import_quackie(QUACKIE_SQUAD_V2, name="small", version="1")
    InterpretationSet.objects.filter(pk=iset.pk).update(
        samples=[{"id": "s1", "question": "q", "context": "c", "sentences": ["c"], "gt_candidates": [SENTINEL]}])
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    model = quackie_tracks.register_model(slug="tiny", name="Tiny", kind="classification", path=model_dir)
    track = quackie_tracks.create_track(iset, model)
    Track.objects.filter(pk=track.pk).update(status=JobStatus.DONE,
                                             inclusion={SENTINEL: {"tokens": 9, "answerable": True, "included": True}})
    test_set = make_task("expmrc-squad").current_test_set()
    variant = SkillVariant.objects.create(test_set=test_set, skill="s1", status="ok", n_items=1,
                                          gold={"data": [SENTINEL]}, public_inputs={"data": [SENTINEL]},
                                          key_spec={"keys": [SENTINEL]})
    return {"hostedmodel": model, "track": track, "interpretationset": iset, "skillvariant": variant}


@pytest.mark.parametrize("name", ["hostedmodel", "track", "interpretationset", "skillvariant"])
def test_list_and_change_pages_open_without_loading_the_large_columns(admin_client, objects, name):
    for url in (f"/admin/benchmark/{name}/", f"/admin/benchmark/{name}/{objects[name].pk}/change/"):
        with CaptureQueriesContext(connection) as queries:
            page = admin_client.get(url)
        assert page.status_code == 200, url
        assert SENTINEL not in page.content.decode(), url
        selects = " ".join(q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT"))
        assert not [column for column in LARGE_COLUMNS if column in selects], url
    listed = {"hostedmodel": "Tiny", "track": "quackie-small-tiny", "interpretationset": "small", "skillvariant": "s1"}
    assert listed[name] in admin_client.get(f"/admin/benchmark/{name}/").content.decode()


def test_the_test_set_pages_do_not_load_the_gold_either(admin_client, objects):
    test_set = StoredTestSet.objects.get(task__slug="expmrc-squad")
    for url in ("/admin/benchmark/testset/", f"/admin/benchmark/testset/{test_set.pk}/change/"):
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(url).status_code == 200
        selects = " ".join(q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT"))
        assert '"gold"' not in selects and '"public_inputs"' not in selects, url


def test_the_task_list_shows_and_filters_visibility_and_ranking_rule(admin_client):
    make_task("expmrc-squad")
    make_task("expmrc-race")
    Task.objects.filter(slug="expmrc-race").update(visibility="hidden", ranking_rule="best_per_system")
    page = admin_client.get("/admin/benchmark/task/").content.decode()
    assert "column-visibility" in page and "column-ranking_rule" in page
    assert "One per system: its best entry" in page
    hidden = admin_client.get("/admin/benchmark/task/?visibility__exact=hidden").content.decode()
    assert "expmrc-race" in hidden and "expmrc-squad" not in hidden
    best = admin_client.get("/admin/benchmark/task/?ranking_rule__exact=best_per_system").content.decode()
    assert "expmrc-race" in best and "expmrc-squad" not in best


def test_a_track_inclusion_run_is_queued_again_from_the_admin(admin_client, objects):
    track = objects["track"]
    Track.objects.filter(pk=track.pk).update(status=JobStatus.FAILED, error="worker lost", attempts=3)
    admin_client.post("/admin/benchmark/track/", {"action": "compute_inclusion_again", "_selected_action": [track.pk]})
    track.refresh_from_db()
    assert (track.status, track.error, track.attempts, track.done) == (JobStatus.QUEUED, "", 0, 0)


def test_a_hosted_model_is_added_only_with_a_local_model_folder(admin_client, tmp_path):
    form = {"slug": "m", "name": "M", "kind": "classification", "description": ""}
    refused = admin_client.post("/admin/benchmark/hostedmodel/add/", {**form, "path": str(tmp_path / "nothing")})
    assert refused.status_code == 200 and "No config.json there" in refused.content.decode()
    assert not HostedModel.objects.exists()
    (tmp_path / "config.json").write_text("{}")
    admin_client.post("/admin/benchmark/hostedmodel/add/", {**form, "path": str(tmp_path)})
    assert HostedModel.objects.get().path == str(tmp_path)
