"""NumPy's elementwise odds: the ufuncs that move a float by its sign, exponent or ulp, take it
apart, or say something about it.

* ``np.copysign(x, y)``: ``|x| sign(y)``, the derivative in x the sign matching (0 in y,
  whose sign is locally constant); ``np.ldexp(x, n) = x 2**n`` (n an int: none);
  ``np.nextafter(x, y)``: x moved one ulp towards y, derivative 1 in x and 0 in y (the step
  is the float grid's, no function of x's value to first order);
* ``np.spacing(x)`` (the ulp at x), ``np.invert`` / ``np.bitwise_not``, ``np.bitwise_count``:
  piecewise constant or of ints: no derivative (``zero_derivative``, in ``ufuncs``'
  ``ZERO_UNARY``);
* ``np.frexp(x) = (m, e)``, ``x = m 2**e``: the mantissa's derivative ``2**-e``, the exponent
  none; ``np.modf(x) = (x - trunc(x), trunc(x))``: the fractional part's derivative 1, the
  integral part's 0.  Both are twins (plain Python of calls with rules), so every mode follows.

Their ``out=`` forms (the output by position or keyword) are ``gibbous.rules.inplace``'s, with
the comparisons and predicates.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.infer.implementations import register_twin
from gibbous.library.elementwise import tables, variants
from gibbous.rules import frules
from gibbous.rules.registry import primitive, zero_derivative

#: Two-operand ufuncs with a derivative in their first operand only.
FIRST_ONLY: dict[np.ufunc, tables.BinaryGrad] = {
    np.copysign: tables.g_copysign_x,
    np.nextafter: tables.g_first,
}

for _ufunc, _gx in FIRST_ONLY.items():
    variants.register_binary([_ufunc], _gx, None, tables.BINARY_PATTERNS)
# ldexp's exponent is an int (array): the general rule only (the float variants would take a
# float exponent, which NumPy refuses).
for _pattern in tables.BINARY_PATTERNS:
    primitive(np.ldexp, *_pattern)(tables.binary_rule(tables.g_ldexp_x, None))
frules.register_elementwise([np.ldexp], (tables.g_ldexp_x, None), tables.FORMULA)


def _exponent(x: t.Any) -> t.Any:
    return np.frexp(x)[1]


zero_derivative(_exponent, ...)


def frexp_twin(x: t.Any, /) -> tuple[t.Any, t.Any]:
    """``np.frexp(x)``: the exponent (no derivative), then the mantissa ``ldexp(x, -e)``,
    exact, as NumPy's."""
    e = _exponent(x)
    return np.ldexp(x, -e), e


def modf_twin(x: t.Any, /) -> tuple[t.Any, t.Any]:
    """``np.modf(x)``: the integral part ``trunc(x)`` and the rest, with NumPy's signs (the
    fractional part takes x's sign, ``-0.0`` of ``-3.0``) and 0 of an infinity."""
    finite = np.where(np.isinf(x), 0.0, x)  # (inf - inf would be nan)
    return np.copysign(finite - np.trunc(finite), x), np.trunc(x)


register_twin(np.frexp, t.cast(t.Any, frexp_twin))
register_twin(np.modf, t.cast(t.Any, modf_twin))
