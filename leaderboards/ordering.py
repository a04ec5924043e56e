"""The orders a task board can be read in (``?sort=<key>&order=asc|desc`` on the page and the
API): its own (rank), the system's name, every metric column, the lower end of the primary
metric's CI and, on QUACKIE boards, failed samples. Pinned rows (human performance) head every
order; rows without a value on the key (unranked entries, reported rows without a CI) come last
in both directions."""
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils.translation import get_language, gettext

from benchmark.models import Task

from .models import MAX_METRIC_COLUMNS, SORT_FIELDS


class OrderError(ValueError):
    """A ``sort`` or ``order`` the board does not offer; the message lists what it does."""


@dataclass(frozen=True)
class SortKey:
    field: str  # the BoardRow column holding each row's ordinal on this key
    descending_first: bool  # scores best first; names, ranks and failures smallest first
    value_of: Callable[[dict[str, Any]], Any]
    label: str  # in the active language (the page's; English for the API)


def sort_keys(task: Task) -> dict[str, SortKey]:
    """{the ``sort`` value: its key} for this task's board; ``tier`` sorts as ``rank`` does."""
    return _sort_keys(task.kind, get_language())


@functools.lru_cache(maxsize=256)
def _sort_keys(kind: str, language: str | None) -> dict[str, SortKey]:
    # Read on every board request (to check ``sort``): the same for every task of a kind, in a language.
    task = Task(kind=kind)
    primary = task.primary_metric
    labels = dict(task.metric_columns)

    def ci_low(row: dict[str, Any]) -> float | None:
        return None if row["reported"] else ((row["ci"] or {}).get(primary) or (None, None))[0]

    rank = SortKey(SORT_FIELDS["rank"], False, lambda row: row["rank"], gettext("rank"))
    keys = {"rank": rank, "tier": rank,
            "system": SortKey(SORT_FIELDS["system"], False, lambda row: row["method"].casefold(),
                              gettext("system name"))}
    for index, (key, label) in enumerate(task.metric_columns[:MAX_METRIC_COLUMNS]):
        keys[key] = SortKey(f"by_metric_{index}", True, metric_value(key), label)
    keys["ci"] = SortKey(SORT_FIELDS["ci"], True, ci_low,
                         gettext("lower end of the 95%% CI of %(metric)s") % {"metric": labels[primary]})
    if task.kind_definition.counts_failed_samples:
        keys["fails"] = SortKey(SORT_FIELDS["fails"], False, lambda row: row["fails"], gettext("failed samples"))
    return keys


def metric_value(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: row["scores"].get(key)


@dataclass(frozen=True)
class Order:
    sort: str = "rank"
    descending: bool = False

    @property
    def is_default(self) -> bool:
        return self.sort == "rank" and not self.descending

    @property
    def query(self) -> str:
        return f"sort={self.sort}&order={'desc' if self.descending else 'asc'}"

    def label(self, task: Task) -> str:
        direction = gettext("descending") if self.descending else gettext("ascending")
        return gettext("%(key)s, %(direction)s") % {"key": sort_keys(task)[self.sort].label, "direction": direction}


def read_order(task: Task, sort: str | None, order: str | None) -> Order:
    """The order a request asks for; without ``order``, the key's natural direction."""
    keys = sort_keys(task)
    sort = sort or "rank"
    if sort not in keys:
        raise OrderError(f"sort: one of {', '.join(keys)} (not {sort[:40]!r})")
    if order is not None and order not in ("", "asc", "desc"):
        raise OrderError(f"order: asc or desc (not {order[:40]!r})")
    return Order(sort, keys[sort].descending_first if not order else order == "desc")
