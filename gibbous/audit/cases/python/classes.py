"""Cases for the rules that calling Python classes needs (``gibbous.library.python.classes``):
``object.__new__`` in a ``__new__`` written in Python, and ``tuple.__new__`` as a NamedTuple's
``__new__`` and ``_make`` call it; ``object.__init__``; ``functools.partial``.  (``NamedTuple._replace`` is found by its code object, not
registered; tests/ad/test_classes.py differentiates it in whole programs.)"""

from __future__ import annotations

import functools
import typing as t

import numpy as np

from gibbous.testing import RuleCase, case


class Empty:
    """A plain class: ``object.__new__`` makes an instance with no fields yet."""


class Slotted:
    __slots__ = ("a",)


class Pair(t.NamedTuple):
    a: float
    b: float


class Mixed(t.NamedTuple):
    w: np.ndarray
    n: int
    s: float


def weighted(x: np.ndarray, w: np.ndarray, scale: float = 1.0) -> float:
    return float(np.sum(x * w)) * scale


CASES: list[RuleCase] = [
    # functools.partial: the partial's tangent holds its bound arrays' fdata and floats' rdata.
    case(functools.partial, weighted, np.array([0.5, -1.5]), kwargs={"scale": 2.5}),
    case(functools.partial, weighted, kwargs={"w": np.array([1.0, 2.0]), "scale": -0.5}),
    case(functools.partial, weighted, np.array([0.5]), np.array([2.0]), 1.5),
    case(object.__new__, Empty),
    case(object.__new__, Slotted),
    case(object.__init__, Empty()),  # (``super().__init__()`` at the top of a hierarchy)
    case(tuple.__new__, Pair, (1.5, -0.5)),
    case(tuple.__new__, Mixed, (np.array([0.5, 1.5, -2.0]), 3, 0.25)),
    case(tuple.__new__, tuple, (1.0, 2.0)),
]
