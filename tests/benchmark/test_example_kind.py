"""A new task kind is one class and one registration (benchmark/kinds/base.py).

The example kind below is not shipped: yes/no questions in the style of BoolQ (Clark et al.,
2019), scored by the existing classification scorer. Registering it is the only change; the
catalogue, the importer, the upload form and API, the worker's scoring, the board (page, API,
CSV) and the benchmark page then serve it with its own words, and no product file names it."""
import json

import pytest
from django.test import Client

from benchmark import kinds
from benchmark.importers import import_classification
from benchmark.kinds.base import CI_BAR, REPORTED, TIER, Wording
from benchmark.kinds.classification import ClassificationKind
from benchmark.models import Benchmark, Task
from submissions.models import Status, Submission
from submissions.runs import claim_and_score
from tests.factories import api_for, logged_in, make_user, upload_file

pytestmark = pytest.mark.django_db


class YesNoKind(ClassificationKind):
    name = "yes-no"
    label = "Yes/no questions"
    icq_format = ""  # no cue discovery for this kind: per-entry diagnostics do not apply
    file_help = 'One JSON object {"<question id>": "yes" or "no"}.'
    upload_format_template = "kinds/generic_format.html"
    wording = Wording(
        family="Yes/no QA",
        metric="Accuracy: the share of questions answered with the right yes or no (×100).",
        ranking="Ranked by accuracy, highest first; a question without an answer counts as wrong.",
        footnote="Questions in the style of BoolQ (Clark et al., 2019).",
        guide=(("Accuracy", "share of questions answered correctly. The ranking column."), CI_BAR, TIER, REPORTED),
    )


@pytest.fixture
def yes_no_kind():
    kinds.register(YesNoKind)
    yield kinds.get(YesNoKind.name)
    kinds.unregister(YesNoKind.name)


QUESTIONS = [{"id": f"q{i}", "premise": f"Passage {i} says the lake freezes in winter.",
              "hypothesis": f"Does lake {i} freeze?", "label": "yes" if i % 3 else "no"} for i in range(12)]


@pytest.fixture
def yes_no_task(yes_no_kind, tmp_path):
    benchmark = Benchmark.objects.create(slug="yes-no", name="Yes/no QA")
    task = Task.objects.create(benchmark=benchmark, slug="yes-no-dev", name="Yes/no", kind=yes_no_kind.name)
    path = tmp_path / "yes-no.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in QUESTIONS), encoding="utf-8")
    import_classification(path, task_slug=task.slug, split="test", version="1")
    return task


def test_a_registered_kind_is_served_everywhere_without_a_product_change(yes_no_task):
    task = Task.objects.get(pk=yes_no_task.pk)
    assert task.kind_definition.label == "Yes/no questions" and task.get_kind_display() == "Yes/no questions"
    assert [kind["slug"] for kind in Client().get("/api/v1/tasks/?kind=yes-no").json()["results"]] == ["yes-no-dev"]

    user = make_user()
    submit_page = logged_in(user).get("/tasks/yes-no-dev/submit/").content.decode()
    assert "&quot;yes&quot; or &quot;no&quot;" in submit_page  # the kind's own upload help
    predictions = {row["id"]: "yes" for row in QUESTIONS}
    response = api_for(user).post("/api/v1/tasks/yes-no-dev/submissions/",
                                  {"file": upload_file(predictions), "method_name": "Always yes"}, format="multipart")
    assert response.status_code == 201, response.content
    assert claim_and_score(response.json()["id"]) == Status.SCORED
    entry = Submission.objects.get(pk=response.json()["id"])
    expected = 100.0 * sum(row["label"] == "yes" for row in QUESTIONS) / len(QUESTIONS)
    assert entry.scores["accuracy"] == pytest.approx(expected)
    assert entry.scorer_version == ClassificationKind.scorer_version
    assert entry.diagnostics_status == ""  # no diagnostics declared: no job queued

    board = Client().get("/tasks/yes-no-dev/")
    assert board.status_code == 200
    page = board.content.decode()
    assert "Always yes" in page and "BoolQ (Clark et al., 2019)" in page and "Accuracy" in page
    api_rows = Client().get("/api/v1/tasks/yes-no-dev/leaderboard/").json()["results"]
    assert [row["method"] for row in api_rows] == ["Always yes"]
    assert "Always yes" in Client().get("/tasks/yes-no-dev/leaderboard.csv").content.decode()
    assert Client().get("/benchmarks/yes-no/").status_code == 200


def test_a_wrong_answer_shape_is_refused_by_the_kinds_scorer(yes_no_task):
    response = api_for(make_user()).post("/api/v1/tasks/yes-no-dev/submissions/",
                                         {"file": upload_file({"q1": "maybe"}), "method_name": "Unsure"},
                                         format="multipart")
    assert response.status_code == 400 and "maybe" in response.json()["detail"]


def test_a_kind_name_is_registered_once():
    with pytest.raises(ValueError, match="registered already"):
        kinds.register(ClassificationKind)
    with pytest.raises(LookupError, match="no task kind 'nope'"):
        kinds.get("nope")
