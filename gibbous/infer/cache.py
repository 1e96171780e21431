"""What inference keeps between calls: typed copies of the functions called, and summaries."""

from __future__ import annotations

import attrs

from gibbous.ir import types as T
from gibbous.ir.core import Function


@attrs.frozen
class Summary:
    """What a call of an inferred function does, in terms of its argument types.

    ``arguments`` are the argument types at the end (element types of containers grown by the
    function's mutations); ``result`` is the type of what it returns; ``runs_unknown_code``
    says whether it may call code inference knows nothing of.
    """

    result: T.Type
    arguments: tuple[T.Type, ...]
    runs_unknown_code: bool


Signature = tuple[object, tuple[T.Type, ...], frozenset[frozenset[tuple[object, ...]]]]


@attrs.define
class InferenceCache:
    """Typed copies of the user functions that inferred code calls, and what the calls do.

    Keyed by function, argument types and which container arguments may alias each other.
    """

    functions: dict[Signature, Function] = attrs.field(factory=dict)
    summaries: dict[Signature, Summary] = attrs.field(factory=dict)
    active: set[Signature] = attrs.field(factory=set)

    def typed(self, fn: object) -> list[Function]:
        """The typed copies made for ``fn``, one per signature."""
        return [g for (f, _, _), g in self.functions.items() if f is fn]
