"""A board row is one typed structure (leaderboards/rows.py): the API serializer declares every
field of it (a key it did not declare would be dropped from the API without a word), and a
change of the row's fields changes every stored board's stamp, so stored boards are rebuilt."""
from dataclasses import fields

from benchmark.models import Task
from leaderboards import rows, store
from leaderboards.serializers import LeaderboardRowSerializer


def test_the_serializer_declares_every_field_of_the_row():
    assert set(LeaderboardRowSerializer().fields) == {f.name for f in fields(rows.BoardEntry)}


def test_the_stamp_names_the_rows_shape(monkeypatch):
    task = Task(pk=1, kind="span")
    before = store.task_stamp(task, 3)
    monkeypatch.setattr(store, "ROW_SHAPE", "other-shape")
    assert store.task_stamp(task, 3) != before and "other-shape" in store.task_stamp(task, 3)
