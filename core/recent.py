"""What a process keeps of what it used last: page states (core/brief_memo.py), stored answers'
bytes (core/conditional.py) and rate-limit reservations (core/rate_limits.py). Each is bounded,
so a visitor asking for many distinct things only pushes out older ones."""
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class RecentlyUsed(Generic[V]):
    """A map of at most ``max_items`` values whose ``weight`` sums to at most ``max_weight``;
    the least recently used go first. Every method is atomic; a caller that reads and then
    writes a value holds ``lock`` (reentrant) around both. The front's threads share a process
    (config/front.py)."""

    def __init__(self, *, max_items: int | None = None, max_weight: int | None = None,
                 weight: Callable[[V], int] = lambda value: 1) -> None:
        self.max_items, self.max_weight, self.weight = max_items, max_weight, weight
        self.size = 0  # the sum of the kept values' weights
        self.lock = threading.RLock()
        self._kept: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        with self.lock:
            value = self._kept.get(key)
            if value is not None:
                self._kept.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self.lock:
            if key in self._kept:
                self.size -= self.weight(self._kept.pop(key))
            self._kept[key] = value
            self.size += self.weight(value)
            while ((self.max_items is not None and len(self._kept) > self.max_items)
                   or (self.max_weight is not None and self.size > self.max_weight)):
                _, dropped = self._kept.popitem(last=False)
                self.size -= self.weight(dropped)

    def clear(self) -> None:
        with self.lock:
            self._kept.clear()
            self.size = 0

    def __len__(self) -> int:
        return len(self._kept)
