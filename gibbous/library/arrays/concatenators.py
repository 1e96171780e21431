"""``np.r_[...]`` and ``np.c_[...]``: index expressions that concatenate.

In the IR they are ``operator.getitem(np.r_, key)`` with the constant concatenator (an
``AxisConcatenator``: ``RClass`` or ``CClass``, types ``object<...RClass>`` and
``object<...CClass>``) and a key that is one item or a tuple of items: arrays, scalars, (nested)
lists, slices (``0:3``, ``0:1:5j``: ranges, without derivative) and a leading directive string
that sets the axis, the minimum rank and where a vector's axis goes (``'0,2'``, ``'-1,2,0'``).

The pullback makes the same call with each item replaced by its element numbers
(``common.element_numbers``; a slice by a vector of zeros of its length), so NumPy itself says
where every element of every item went, through promotion to the minimum rank, transposition
and concatenation, and collects the cotangent back along those routes.

Refused (``NotImplementedError``): the matrix directives ``'r'`` and ``'c'`` (``np.matrix``
results) and a key that is a whole string (``np.r_['1 2; 3 4']``), which NumPy evaluates as a
matrix expression in its caller's frame.
"""

from __future__ import annotations

import math
import operator
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.library.common import (
    ANY,
    CD,
    NT,
    RuleResult,
    collect,
    cotangent,
    element_numbers,
    new_fdata,
)
from gibbous.library.items import items_of
from gibbous.library.items import send_to_value
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual, zero_rdata

#: The classes of ``np.r_`` and ``np.c_`` (their module moved between NumPy versions).
CONCATENATORS: tuple[type, ...] = (type(np.r_), type(np.c_))


def _refuse(items: tuple[t.Any, ...]) -> None:
    first = items[0] if items else None
    if isinstance(first, str) and first in ("r", "c"):
        raise NotImplementedError(
            f"np.r_/np.c_ with the matrix directive {first!r}: no rule (it makes an np.matrix); "
            "drop the directive and use np.asarray on the result"
        )


def _range_length(s: slice) -> int:
    """How many numbers ``np.r_[s]`` makes of a slice (a complex step is a count)."""
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, (complex, np.complexfloating)):
        return int(t.cast(t.Any, abs(step)))
    return int(np.arange(start, s.stop, step).size)


def _numbered(items: tuple[t.Any, ...]) -> tuple[tuple[t.Any, ...], list[tuple[int, int]], int]:
    """The key with each item replaced by its element numbers (from 1 on; 0: a range's),
    each numbered item's (position, first number), and the count of numbers plus one."""
    numbered: list[t.Any] = []
    spans = []
    first = 1
    for j, item in enumerate(items):
        if isinstance(item, str):
            numbered.append(item)
        elif isinstance(item, slice):
            numbered.append(np.zeros(_range_length(item), dtype=np.intp))
        else:
            numbers = element_numbers(np.shape(item), first)
            # A scalar of a Python or NumPy scalar class is promoted otherwise than an array.
            numbered.append(int(numbers) if type(item) in np.ScalarType else numbers)
            spans.append((j, first))
            first += numbers.size
    return tuple(numbered), spans, first


def concatenator_rrule(f: CD, conc: CD, key: CD) -> RuleResult:
    k = key.primal
    if isinstance(k, str):
        raise NotImplementedError(
            "np.r_/np.c_ with a string key (a matrix expression): no rule; "
            "concatenate the arrays themselves"
        )
    single = type(k) is not tuple
    items = (k,) if single else t.cast(tuple[t.Any, ...], k)
    _refuse(items)
    y = f.primal(conc.primal, k)
    yf = new_fdata(y)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        if g is None or not isinstance(yf, np.ndarray):
            return NT, NT, zero_rdata(k)
        numbered, spans, count = _numbered(items)
        routes = f.primal(conc.primal, numbered[0] if single else numbered)
        acc = collect(g, routes, count)
        pieces = {
            j: acc[first : first + math.prod(np.shape(items[j]))].reshape(np.shape(items[j]))
            for j, first in spans
        }
        if single:
            return NT, NT, send_to_value(key, pieces[0]) if pieces else zero_rdata(k)
        parts = items_of(k, key.fdata)
        for j, piece in pieces.items():
            parts.send(j, piece)
        return NT, NT, parts.rdata()

    return CoDual(y, yf), pullback


for _cls in CONCATENATORS:
    primitive(operator.getitem, T.Object(_cls), ANY)(concatenator_rrule)
