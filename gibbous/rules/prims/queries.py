"""Calls without derivative: comparisons, bitwise operators, queries (``len``,
``isinstance``, ``in``, ...), text (``repr``, ``format``, string methods), sets, indices
(``argmax``...).  Comparisons and bitwise operators check that their result is not
differentiable: a user ``__lt__`` may return anything.
"""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np

from gibbous.rules.prims.common import ANY, CD, LIST, NT, STR, RuleResult, no_pullback
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.rules.tangents import CoDual, is_differentiable

# Methods of strings, which have no tangent.
_STR_METHODS = """
    upper lower strip lstrip rstrip split rsplit join replace startswith endswith format find
    index count capitalize title casefold center ljust rjust zfill isdigit isalpha isspace
""".split()


def _boolean_rrule(f: CD, *args: CD) -> RuleResult:
    """Comparisons and bitwise operators: no derivative, but a result with a tangent (a user
    ``__lt__`` returning a float) would need one, so it is refused rather than zeroed."""
    y = f.primal(*(a.primal for a in args))
    if is_differentiable(y):
        raise NotImplementedError(
            f"{getattr(f.primal, '__name__', f.primal)} returned a {type(y).__qualname__}, which "
            "has a derivative; gibbous differentiates comparisons only as booleans"
        )
    return CoDual(y, NT), no_pullback(1 + len(args))


for _op in (
    operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
    operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
):  # fmt: skip
    primitive(_op, ANY, ANY)(_boolean_rrule)
primitive(operator.invert, ANY)(_boolean_rrule)

_ZERO: tuple[tuple[object, tuple[t.Any, ...]], ...] = (
    (builtins.len, (ANY,)),
    (operator.contains, (ANY, ANY)),
    (operator.is_, (ANY, ANY)),
    (operator.is_not, (ANY, ANY)),
    (operator.not_, (ANY,)),
    (operator.truth, (ANY,)),
    (builtins.isinstance, (ANY, ANY)),
    (builtins.print, (...,)),
    (builtins.range, (...,)),
    (builtins.slice, (...,)),
    (list.index, (LIST, ...)),
    (list.count, (LIST, ...)),
    (builtins.repr, (...,)),
    (builtins.str, (...,)),
    (builtins.ascii, (...,)),
    (builtins.format, (...,)),
    (builtins.hash, (ANY,)),
    (builtins.issubclass, (ANY, ANY)),
    (builtins.callable, (ANY,)),
    (builtins.hasattr, (ANY, ANY)),
    (builtins.type, (ANY,)),
    (builtins.id, (ANY,)),
    (set.add, (ANY, ANY)),
    (set.update, (ANY, ...)),
    (set.discard, (ANY, ANY)),
    (set.remove, (ANY, ANY)),
    (np.ndindex, (...,)),
    (np.argmax, (...,)),
    (np.argmin, (...,)),
    (np.argsort, (...,)),
    (np.ndarray.argmax, (...,)),
    (np.ndarray.argmin, (...,)),
    (np.ndarray.argsort, (...,)),
    (np.shape, (ANY,)),
    (np.ndim, (ANY,)),
    (np.size, (...,)),
    *((getattr(str, _name), (STR, ...)) for _name in _STR_METHODS),
)
for _zero_fn, _pattern in _ZERO:
    zero_derivative(_zero_fn, *_pattern)
