"""SciPy: rules for ``scipy.special``'s Bessel functions and their kin, in both modes, from the
formulas of ``gibbous.rules.formulas`` (``gibbous.library.scipy.ufuncs`` registers them).

* orders 0 and 1: ``j0 j1 y0 y1 i0 i0e i1 i1e k0 k0e k1 k1e``;
* real orders ``v``: ``jv`` (also ``jn``) ``jve yv yve iv ive kv kve``, and the Struve
  functions ``struve modstruve``, in the argument by the recurrences SciPy's ``jvp yvp ivp kvp``
  compute; integer orders ``n``: ``yn kn``;
* ``hyp0f1(v, x)`` in ``x``; the orthogonal polynomials ``eval_hermite eval_hermitenorm
  eval_chebyt`` in ``x``.

None in the order or the degree, which is refused by name where it carries a derivative
(``gibbous.rules.no_derivative``): the derivative of a Bessel function in its order has no
closed form SciPy evaluates, and an integer order has none.  Real operands only (the complex
functions' conventions, ``jve``'s ``exp(-|Im z|)``, are not holomorphic).
"""

from __future__ import annotations

import scipy.special as sps

from gibbous.library.scipy.ufuncs import INTEGER, NOT_CLOSED, Operand, Refuse, register

V, N = Refuse("v", NOT_CLOSED), Refuse("n", INTEGER)

UNARY: dict[object, Operand] = {
    fn: fn.__name__
    for fn in (sps.j0, sps.j1, sps.y0, sps.y1, sps.i0, sps.i0e, sps.i1, sps.i1e, sps.k0,
               sps.k0e, sps.k1, sps.k1e)
}  # fmt: skip
BINARY: dict[object, tuple[Operand, Operand]] = {
    **{
        fn: (V, f"{fn.__name__}_y")  # (jv is also scipy.special.jn)
        for fn in (sps.jv, sps.jve, sps.yv, sps.yve, sps.iv, sps.ive, sps.kv, sps.kve,
                   sps.struve, sps.modstruve, sps.hyp0f1)
    },
    sps.yn: (N, "yv_y"),  # (yv of the same integer orders)
    sps.kn: (N, "kv_y"),
    **{
        fn: (N, f"{fn.__name__}_y")
        for fn in (sps.eval_hermite, sps.eval_hermitenorm, sps.eval_chebyt)
    },
}  # fmt: skip

register(UNARY, BINARY)
