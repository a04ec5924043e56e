"""The task kinds, registered in one place (``benchmark/kinds/base.py`` says what a kind
declares). ``get(name)`` is how the rest of the product learns about a kind; a new kind is a
module in this package and one line in ``KINDS``."""
from collections.abc import Callable

from django.utils.translation import gettext

from .base import CODE, MODEL, MODEL_UPLOAD, PREDICTIONS, SKILLS, ScoredRun, StoredSplit, TaskKind, Wording
from .checklist import ChecklistKind
from .classification import ClassificationKind
from .expmrc import MultichoiceKind, SpanKind
from .interpretation import InterpretationKind

__all__ = ["CODE", "MODEL", "MODEL_UPLOAD", "PREDICTIONS", "SKILLS", "ScoredRun", "StoredSplit", "TaskKind", "Wording",
           "choices", "get", "names", "register", "registered", "unregister"]

# In the order forms and the admin list them.
KINDS: tuple[type[TaskKind], ...] = (SpanKind, MultichoiceKind, InterpretationKind, ClassificationKind,
                                     ChecklistKind)

_REGISTRY: dict[str, TaskKind] = {}


def register(kind_class: type[TaskKind]) -> TaskKind:
    """Make ``kind_class`` a kind tasks may have; returns its (one) instance."""
    if kind_class.name in _REGISTRY:
        raise ValueError(f"a task kind named {kind_class.name!r} is registered already")
    _REGISTRY[kind_class.name] = kind_class()
    return _REGISTRY[kind_class.name]


def unregister(name: str) -> None:
    """Remove a kind (tests that register an example kind take it out again)."""
    del _REGISTRY[name]


def get(name: str) -> TaskKind:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise LookupError(f"no task kind {name!r}; known kinds: {', '.join(_REGISTRY)}") from None


def registered() -> list[TaskKind]:
    return list(_REGISTRY.values())


def choices() -> list[tuple[str, str]]:
    """(name, label) of every registered kind: ``Task.kind``'s choices, read when used, so that
    registering a kind needs no migration. Labels come in the active language (a page's; English
    for the API, commands and workers)."""
    return [(kind.name, gettext(kind.label)) for kind in _REGISTRY.values()]


def names(where: Callable[[TaskKind], bool] = lambda kind: True) -> list[str]:
    """Names of the registered kinds for which ``where`` holds, e.g.
    ``names(lambda kind: kind.builds_skill_sets)``."""
    return [kind.name for kind in _REGISTRY.values() if where(kind)]


for _kind_class in KINDS:
    register(_kind_class)
