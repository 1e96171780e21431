"""NumPy's polynomial functions of coefficient arrays whose own Python goes through
``np.poly1d`` or an operator without a rule, as twins (``gibbous.infer.implementations``):

* ``np.polymul(a1, a2)``: ``np.convolve`` of the coefficients, leading zeros trimmed (as
  ``poly1d`` trims them);
* ``np.polyint(p, m=1, k=None)``: ``m`` times, the coefficients over their powers and the
  next integration constant.

Of ``np.poly1d`` objects they are refused (``UnsupportedArgumentError``): pass the
coefficients (``p.coeffs``).
"""

from __future__ import annotations

import types
import typing as t

import numpy as np

from gibbous.infer.implementations import register_twin, twin_helper
from gibbous.ir.exceptions import UnsupportedArgumentError


@twin_helper
def _coefficients(a: t.Any, name: str) -> t.Any:
    """``a``'s coefficients as ``np.poly1d`` has them: at least one, leading zeros trimmed."""
    if isinstance(a, np.poly1d):
        raise UnsupportedArgumentError(f"{name} of a np.poly1d: no rule (pass its coeffs)")
    c = np.trim_zeros(np.atleast_1d(a), "f")
    return c if len(c) else np.zeros(1, dtype=np.asarray(a).dtype)


def polymul(a1: t.Any, a2: t.Any) -> t.Any:
    """``np.polymul`` of coefficient arrays."""
    return np.convolve(_coefficients(a1, "np.polymul"), _coefficients(a2, "np.polymul"))


def polyint(p: t.Any, m: t.Any = 1, k: t.Any = None) -> t.Any:
    """``np.polyint`` of a coefficient array."""
    if isinstance(p, np.poly1d):
        raise UnsupportedArgumentError("np.polyint of a np.poly1d: no rule (pass its coeffs)")
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    constants = np.zeros(m, float) if k is None else np.atleast_1d(k)
    if len(constants) == 1 and m > 1:
        constants = constants[0] * np.ones(m, float)
    if len(constants) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    y = np.asarray(p)
    for i in range(m):
        y = np.concatenate((y / np.arange(len(y), 0, -1), [constants[i]]))
    return y


register_twin(np.polymul, t.cast(types.FunctionType, polymul))
register_twin(np.polyint, t.cast(types.FunctionType, polyint))
