"""Re-scoring across test-set versions that withdraw and add questions (docs/operations.md#re-scoring):
predictions for withdrawn questions are ignored and counted, added questions score 0 as the
official scorer scores a missing prediction, the entries come back on the board with their history
and the numbers the scorer gives on the filtered predictions. New uploads stay strict."""
import copy
import json
import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from benchmark.importers import import_expmrc
from scoring.metrics import expmrc
from scoring.strict_json import InvalidPredictions
from scoring.withdrawn import drop_withdrawn
from submissions import intake
from submissions.models import Status, Submission
from submissions.scorers import scorer_for
from submissions.tasks import score_submission
from tests.factories import make_task_from_gold, make_user, upload_file

pytestmark = pytest.mark.django_db

WORDS = "river basalt cliff harbour tower granite valley meadow lantern orchard copper beacon".split()


def synthetic_gold(n_questions, seed=0, prefix="q"):
    """A span test set of ``n_questions`` one-paragraph questions (self-made text)."""
    rng = random.Random(seed)
    data = []
    for i in range(n_questions):
        answer = " ".join(rng.sample(WORDS, 2))
        evidence = f"The {answer} stands near the {rng.choice(WORDS)}."
        context = f"{evidence} Other words follow here about the {rng.choice(WORDS)}."
        data.append({"title": f"t{i}", "paragraphs": [{"context": context, "qas": [{
            "id": f"{prefix}{i:03d}", "question": f"What stands near item {i}?",
            "answers": [{"text": answer, "answer_start": context.index(answer)}], "evidences": [evidence]}]}]})
    return {"version": "expmrc-squad-synthetic", "data": data}


def questions(gold):
    return [qa for item in gold["data"] for p in item["paragraphs"] for qa in p["qas"]]


def predictions_of(gold, seed):
    """A system that gets some questions right, some partly, some wrong."""
    rng = random.Random(seed)
    preds = {}
    for qa in questions(gold):
        answer = qa["answers"][0]["text"]
        roll = rng.random()
        text = answer if roll < 0.5 else answer.split()[0] if roll < 0.8 else rng.choice(WORDS)
        preds[qa["id"]] = {"answer": text, "evidence": qa["evidences"][0] if roll < 0.7 else "nothing"}
    return preds


def corrected(gold, drop, added):
    """A new version: ``drop`` questions withdrawn, ``added`` new ones appended."""
    v2 = copy.deepcopy(gold)
    withdrawn = {qa["id"] for qa in questions(gold)[:drop]}
    v2["data"] = [item for item in v2["data"] if item["paragraphs"][0]["qas"][0]["id"] not in withdrawn]
    v2["data"] += synthetic_gold(added, seed=99, prefix="new")["data"]
    return v2, withdrawn


def scored(task, user, predictions, name):
    submission = intake.submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions),
                                           method_name=name, public=True)
    assert score_submission(submission.pk) == Status.SCORED
    return Submission.objects.get(pk=submission.pk)


def run_queued():
    for pk in Submission.objects.filter(status=Status.QUEUED).values_list("pk", flat=True):
        score_submission(pk)


def test_withdrawn_and_added_questions_rescore_to_the_scorer_s_numbers_on_the_filtered_file(tmp_path, monkeypatch):
    gold = synthetic_gold(40)
    task = make_task_from_gold(tmp_path, gold)
    entries = {name: scored(task, make_user(name), predictions_of(gold, seed), name)
               for seed, name in enumerate(["alpha", "beta", "gamma"])}
    v2_gold, withdrawn = corrected(gold, drop=10, added=2)
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(v2_gold), encoding="utf-8")
    v2, created = import_expmrc(path, task_slug=task.slug, version="v2-minus10-plus2")
    assert created and task.current_test_set().pk == v2.pk
    client = Client()
    assert client.get(f"/api/tasks/{task.slug}/leaderboard/").json()["rows"] == []  # off until re-scored

    monkeypatch.setattr("submissions.rescoring.wait", lambda targets, **kwargs: run_queued() or True)
    out = StringIO()
    call_command("rescore", "--task", task.slug, stdout=out)  # exits 0: no entry failed
    text = out.getvalue()
    assert "re-scored: 3" in text and "failed: 0" in text
    assert "10 predictions for withdrawn questions ignored" in text

    board = {row["submission_id"]: row for row in client.get(f"/api/tasks/{task.slug}/leaderboard/").json()["rows"]}
    for seed, (name, entry) in enumerate(entries.items()):
        entry.refresh_from_db()
        kept = {key: value for key, value in predictions_of(gold, seed).items() if key not in withdrawn}
        official = expmrc.score_predictions(v2_gold, kept)
        assert entry.status == Status.SCORED and entry.test_set_id == v2.pk
        assert entry.scores == {"answer_f1": official.answer, "evidence_f1": official.evidence,
                                "overall_f1": official.overall}, name
        assert entry.total == 32 and entry.unanswered == 2 == official.unanswered  # the 2 added questions
        assert entry.details["withdrawn_predictions"] == 10
        history = list(entry.score_history.order_by("scored_at", "pk"))
        assert [h.test_set_version for h in history] == ["v1", "v2-minus10-plus2"]
        assert history[1].scores == entry.scores
        assert history[1].reason.endswith("; 10 predictions for questions no longer in the test set ignored")
        assert board[entry.pk]["scores"] == entry.scores
        page = client.get(f"/submissions/{entry.pk}/").content.decode()
        assert "10 predictions for questions withdrawn from the test set were ignored" in page
        assert "Ranked on the public leaderboard" in page
        api = client.get(f"/api/v1/submissions/{entry.pk}/").json()
        assert api["leaderboard"] == {"listed": True, "ranked": True, "note": "Ranked on the public leaderboard."}
        assert api["details"]["withdrawn_predictions"] == 10


def test_a_new_upload_with_a_withdrawn_id_is_still_refused(tmp_path):
    gold = synthetic_gold(12)
    task = make_task_from_gold(tmp_path, gold)
    v2_gold, withdrawn = corrected(gold, drop=2, added=0)
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(v2_gold), encoding="utf-8")
    v2, _ = import_expmrc(path, task_slug=task.slug, version="v2")
    raw = json.dumps(predictions_of(gold, 0)).encode()
    scorer = scorer_for(task)
    with pytest.raises(InvalidPredictions, match="keys not in the test set"):
        scorer.parse(raw, v2, max_bytes=10**6)
    predictions, ignored = scorer.parse_stored(raw, v2, max_bytes=10**6)
    assert sorted(ignored) == sorted(withdrawn) and set(predictions) == {qa["id"] for qa in questions(v2_gold)}
    # Leniency covers withdrawn ids only: a stored file that is invalid otherwise is still refused.
    bad = json.dumps({**predictions_of(gold, 0), "q005": {"answer": 3, "evidence": ""}}).encode()
    with pytest.raises(InvalidPredictions, match='"answer" is a number'):
        scorer.parse(bad, v2, max_bytes=10**6, stored=True)


def test_drop_withdrawn_keeps_bytes_duplicates_and_text():
    raw = '{"a": {"answer": "é", "evidence": "x"}, "b": {"answer": "1", "evidence": [1.5, null]}}'.encode()
    assert drop_withdrawn(raw, {"a", "b"}, max_bytes=10**6, expected="{}") == (raw, [])
    kept, gone = drop_withdrawn(raw, {"a"}, max_bytes=10**6, expected="{}")
    assert gone == ["b"] and json.loads(kept) == {"a": {"answer": "é", "evidence": "x"}}
    twice = b'{"a": {"answer": "1", "evidence": ""}, "a": {"answer": "2", "evidence": ""}, "z": 1}'
    kept, gone = drop_withdrawn(twice, {"a"}, max_bytes=10**6, expected="{}")
    assert gone == ["z"] and kept.count(b'"a"') == 2  # still refused as duplicated by the strict parser
    with pytest.raises(InvalidPredictions, match="top level must be a JSON object"):
        drop_withdrawn(b"[1]", {"a"}, max_bytes=10**6, expected="{}")
