"""The rules ``gibbous.grad`` keeps, one per argument signature: bounded.

A signature is the arguments' types (an array's dtype and number of dimensions, not its
shape), so a caller that varies shapes uses one rule; one that varies types builds one rule
per type.  Two bounds keep that from growing without end:

* **entries**: at most ``ENTRIES`` rules, the least recently used dropped first (a rule is
  about 70-300 KiB of programs and state; rebuilding one takes milliseconds);
* **bytes**: only the rule in use keeps its buffers.  When a call uses another rule than the
  previous call, the previous one is reset, which frees its tape and its stateful rules'
  saved copies and gradient buffers (sized like the arguments of its last call); its programs
  stay.  So whatever the calls, the cache holds the programs of ``ENTRIES`` rules and the
  buffers of one.  Alternating between two signatures allocates those buffers again at each
  switch: keep a rule per signature with ``gibbous.build_rrule`` to avoid it.
"""

from __future__ import annotations

import collections
import typing as t

#: Rules kept per ``grad(f)``.
ENTRIES = 8


class Resettable(t.Protocol):
    def reset(self) -> None: ...


R = t.TypeVar("R", bound=Resettable)


class RuleCache(collections.OrderedDict[t.Hashable, R]):
    """Signature -> rule, least recently used first."""

    def __init__(self, entries: int = ENTRIES) -> None:
        super().__init__()
        self.entries = entries
        self._last: R | None = None  # the rule the last call used: it keeps its buffers

    def rule(self, key: t.Hashable, build: t.Callable[..., R], *how: t.Any) -> R:
        """The rule for ``key``, ``build(*how)`` if there is none; the one that gives up its
        buffers for it (the previous call's) is reset."""
        rule = self.get(key)
        if rule is None:
            rule = self[key] = build(*how)
            if len(self) > self.entries:
                self.popitem(last=False)
        if rule is not self._last:
            self.move_to_end(key)
            previous, self._last = self._last, rule
            if previous is not None:
                previous.reset()
        return rule
