"""Values computed from run summaries, kept per process: a small thread-safe least-recently-used map.

Pages compute some values from a run's summary again and again (a summary re-scored in memory, a
bootstrap distribution, a comparison of two runs); each is kept under a key that changes when the
summaries do (``stored_key``), so a value is computed once per change and never served stale.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class Kept:
    """At most ``size`` values by key, the least recently used dropped first."""

    def __init__(self, size: int):
        self.size = size
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, key: Hashable | None, compute: Callable[[], Any]) -> Any:
        """The value kept under ``key``, else ``compute()`` kept under it; without a key, computed and not kept."""
        if key is None:
            return compute()
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = compute()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return value

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._values


def stored_key(*summaries) -> tuple | None:
    """A key that changes whenever one of the stored ``summaries`` is saved again; None if one is not stored
    (re-scored in memory: its value is not kept)."""
    if any(summary._state.adding for summary in summaries):
        return None
    return tuple((summary.pk, summary.computed_at) for summary in summaries)
