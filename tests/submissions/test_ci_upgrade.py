"""The upgrade that recomputes stored confidence intervals with the current method
(submissions/migrations/0009_recompute_confidence_intervals.py)."""
import importlib

import pytest
from django.apps import apps

from benchmark import kinds
from submissions.intake import submit_predictions
from submissions.models import Submission
from submissions.runs import confidence_intervals
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db

upgrade = importlib.import_module("submissions.migrations.0009_recompute_confidence_intervals")


def test_stored_intervals_are_recomputed_from_the_items_and_odd_shapes_left_alone():
    task = make_task("expmrc-squad")
    predictions = perfect_predictions(fixture_gold("expmrc-squad"))
    predictions[next(iter(predictions))] = {"answer": "nothing like it", "evidence": "nothing"}
    sub = submit_predictions(user=make_user(), task=task, method_name="m", uploaded_file=upload_file(predictions))
    score_submission(sub.pk)
    current = Submission.objects.get(pk=sub.pk).ci
    assert current == confidence_intervals(task, Submission.objects.get(pk=sub.pk).item_scores)
    # As an older release stored it: another method's interval.
    Submission.objects.filter(pk=sub.pk).update(ci={key: [0.0, 100.0] for key in current})
    odd = Submission.objects.create(user=sub.user, task=task, test_set=sub.test_set, method_name="odd",
                                    status="scored", item_scores=[[1.0]], ci={"overall_f1": [1.0, 2.0]})

    upgrade.recompute_confidence_intervals(apps, None)

    assert Submission.objects.get(pk=sub.pk).ci == current
    assert Submission.objects.get(pk=odd.pk).ci == {"overall_f1": [1.0, 2.0]}
    assert set(upgrade.COLUMNS_BY_KIND) == set(kinds.names())
    assert upgrade.COLUMNS_BY_KIND[task.kind] == [key for key, _ in task.metric_columns]
