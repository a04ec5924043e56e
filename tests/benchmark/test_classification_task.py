"""NLI-style classification tasks (docs/diagnostics.md#icq-cue-profiling): `manage.py import_classification` for the hidden
test split and the reference split, hidden labels, API uploads scored by accuracy, and the ICQ
cue table and per-entry ICQ tests against the reference split."""
import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from benchmark.models import Task
from benchmark.models import TestSet as StoredTestSet
from benchmark.tasks import discover_cues
from submissions.models import Submission
from submissions.tasks import compute_diagnostics, score_submission
from tests.factories import make_user, token_for, upload_file

pytestmark = pytest.mark.django_db
ICQ = Path(__file__).resolve().parents[1] / "fixtures" / "icq"


def rows(name):
    return [json.loads(line) for line in (ICQ / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def import_split(name, split, version="1"):
    out = io.StringIO()
    call_command("import_classification", str(ICQ / name), "--task", "nli-small", "--split", split,
                 "--version", version, "--name", "NLI small", stdout=out)
    return out.getvalue()


@pytest.fixture
def nli_task():
    assert "imported" in import_split("nli_test.jsonl", "test")
    assert "imported" in import_split("nli_reference.jsonl", "reference")
    return Task.objects.get(slug="nli-small")


def test_import_makes_a_hidden_test_split_and_a_reference_split(nli_task):
    assert nli_task.kind == "classification"
    test_set = nli_task.current_test_set()
    assert test_set.is_hidden and test_set.n_items == len(rows("nli_test.jsonl"))
    assert StoredTestSet.objects.get(task=nli_task, split=StoredTestSet.REFERENCE, is_current=True).n_items == \
        len(rows("nli_reference.jsonl"))
    assert "nothing to do" in import_split("nli_test.jsonl", "test")  # same bytes again: a no-op
    inputs = json.dumps(Client().get("/api/tasks/nli-small/inputs/").json())
    assert '"t5"' in inputs and "premise" in inputs
    for label in ("contradiction", "entailment", "neutral"):
        assert f'"label": "{label}"' not in inputs and f'"label":"{label}"' not in inputs


def test_malformed_rows_are_refused_with_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "premise": "p", "hypothesis": "h", "label": "x"}\n{"id": "b", "premise": "p"}\n')
    with pytest.raises(CommandError) as refused:
        call_command("import_classification", str(bad), "--task", "nli-bad", "--version", "1", "--name", "Bad")
    assert "line 2" in str(refused.value) and "hypothesis" in str(refused.value)
    assert not Task.objects.filter(slug="nli-bad").exists()


def test_an_entry_is_scored_and_profiled_against_the_cues(nli_task):
    test_set = StoredTestSet.objects.get(pk=nli_task.current_test_set().pk)
    assert discover_cues(test_set.pk).endswith("cues")
    cue_part = StoredTestSet.objects.get(pk=test_set.pk).diagnostics["icq"]
    assert cue_part["status"] == "done" and cue_part["cues"]
    page = Client().get("/tasks/nli-small/").content.decode()
    assert 'id="cue-table"' in page
    # The hidden split's side of each cue (S_f's labels, JSD, cueness) is not on the page.
    assert "S<sub>f</sub> labels" not in page and ">JSD<" not in page and ">Cueness<" not in page
    reference_texts = {" · ".join(f"{k} {v:.2f}" for k, v in cue["reference_dist"].items())
                       for cue in cue_part["cues"]}
    for cue in cue_part["cues"]:
        test_text = " · ".join(f"{k} {v:.2f}" for k, v in cue["test_dist"].items())
        if test_text not in reference_texts:
            assert test_text not in page, cue
    assert all(f">{cue['value']}<" in page for cue in cue_part["cues"])
    assert 'id="cue-extractor"' in page and "no statistical tagger" in page  # the method is named

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(make_user())}")
    predictions = {row["id"]: row["label"] for row in rows("nli_predictions.jsonl")}
    response = api.post("/api/tasks/nli-small/submissions/",
                        {"file": upload_file(predictions), "method_name": "Cue follower"}, format="multipart")
    assert response.status_code == 201, response.content
    submission_id = response.json()["id"]
    score_submission(submission_id)
    gold = {row["id"]: row["label"] for row in rows("nli_test.jsonl")}
    expected = 100.0 * sum(predictions.get(k) == v for k, v in gold.items()) / len(gold)
    assert api.get(f"/api/submissions/{submission_id}/").json()["scores"]["accuracy"] == pytest.approx(expected)
    compute_diagnostics(submission_id)
    icq = Submission.objects.get(pk=submission_id).diagnostics["icq"]
    assert icq["applicable"] and icq["accuracy_test"] and icq["distribution_test"]
    assert api.get(f"/api/submissions/{submission_id}/diagnostics/").status_code == 200
    entry_page = Client().get(f"/submissions/{submission_id}/").content.decode()
    assert 'id="icq-extractor"' in entry_page and "no statistical tagger" in entry_page

    refused = api.post("/api/tasks/nli-small/submissions/",
                       {"file": upload_file({"t5": "maybe"}), "method_name": "Bad"}, format="multipart")
    assert refused.status_code == 400 and "maybe" in refused.json()["error"]


def test_the_import_command_of_the_issue_needs_no_version(tmp_path):
    """`manage.py import_classification FILE --task SLUG --split test|reference`: the version
    defaults to the file's checksum, so the same file again is a no-op and a changed file a
    new version."""
    import hashlib

    def run(path, *args):
        out = io.StringIO()
        call_command("import_classification", str(path), "--task", "nli-plain", *args, stdout=out)
        return out.getvalue()

    test_file = ICQ / "nli_test.jsonl"
    version = hashlib.sha256(test_file.read_bytes()).hexdigest()[:12]
    assert f"test version {version}: imported" in run(test_file, "--split", "test", "--name", "NLI plain")
    assert "reference version" in run(ICQ / "nli_reference.jsonl", "--split", "reference")
    assert "nothing to do" in run(test_file, "--split", "test")
    task = Task.objects.get(slug="nli-plain")
    assert StoredTestSet.objects.filter(task=task, split="test").count() == 1

    changed = tmp_path / "nli_test_v2.jsonl"
    lines = test_file.read_text(encoding="utf-8").splitlines()
    changed.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    assert "imported" in run(changed, "--split", "test")
    assert task.current_test_set().version == hashlib.sha256(changed.read_bytes()).hexdigest()[:12]
    assert StoredTestSet.objects.filter(task=task, split="test").count() == 2

    with pytest.raises(CommandError, match="cannot read"):
        run(tmp_path / "missing.jsonl", "--split", "test")


def test_the_icq_distribution_test_is_drawn_as_grouped_bars(nli_task):
    test_set = nli_task.current_test_set()
    discover_cues(test_set.pk)
    user = make_user()
    from submissions.intake import submit_predictions

    predictions = {row["id"]: row["label"] for row in rows("nli_predictions.jsonl")}
    sub = submit_predictions(user=user, task=nli_task, uploaded_file=upload_file(predictions), method_name="Cues")
    score_submission(sub.pk)
    compute_diagnostics(sub.pk)
    stored = Submission.objects.get(pk=sub.pk).diagnostics["icq"]["distribution_test"]
    # A row whose counts would reveal gold labels of the hidden split is withheld, not drawn
    # (scoring.disclosure): this cue-following entry really does give some away.
    distribution = [row for row in stored if not row.get("withheld")]
    assert distribution and len(distribution) < len(stored)
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert 'id="icq-distribution-charts"' in page
    assert page.count('class="chart grouped-chart"') == len(distribution)
    first = distribution[0]
    chart = page[page.index('class="chart grouped-chart"'):]
    chart = chart[:chart.index("</svg>")]
    for name in ("Predicted", "Cue-free model", "Reference Rf"):
        assert name in chart
    for label, share in first["predicted_dist"].items():
        assert f"Predicted {label}: {share:.2f}" in chart  # one bar per label and series
    for label, share in first["reference_dist"].items():
        assert f"Reference Rf {label}: {share:.2f}" in chart
    for label, share in first["null_dist"].items():
        assert f"Cue-free model {label}: {share:.2f}" in chart  # the null the flag is measured against
