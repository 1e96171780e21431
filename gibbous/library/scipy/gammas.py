"""SciPy: rules for ``scipy.special``'s gamma and zeta functions and exponential integrals, in
both modes, from the formulas of ``gibbous.rules.formulas``.

* ``gammainc gammaincc`` (the regularized incomplete gamma functions ``P(a, x)``, ``Q(a, x)``)
  and their inverses ``gammaincinv gammainccinv``, in ``x``; ``rgamma``; ``poch(z, m)`` and
  ``binom(n, k)`` in both; ``multigammaln(a, d)`` in ``a``; ``gammasgn`` (no derivative);
* ``zeta(x, q)`` in ``q``; ``zetac(x)`` in nothing; ``expn(n, x)`` in ``x``, ``exp1``,
  ``expi``; ``spence``.

Refused by name where they carry a derivative (``gibbous.rules.no_derivative``): the shape
``a`` of the incomplete gamma functions (its derivative needs functions SciPy does not have),
the ``x`` of ``zeta`` and ``zetac`` (Riemann's zeta has no derivative in SciPy), the integers
``n`` of ``expn`` and ``d`` of ``multigammaln``.  Real operands only.
"""

from __future__ import annotations

import typing as t

import scipy.special as sps

from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir import types as T
from gibbous.ir.purity import register_pure_array_function
from gibbous.library.common import NUMBER, NUMERIC
from gibbous.library.elementwise import tables
from gibbous.library.scipy.common import TypeArgs, TypeKwargs
from gibbous.library.scipy.ufuncs import INTEGER, NOT_CLOSED, Operand, Refuse, grad, real_only
from gibbous.library.scipy.ufuncs import register, register_types
from gibbous.rules import frules, no_derivative
from gibbous.rules.registry import primitive, zero_derivative

A, X = Refuse("a", NOT_CLOSED), Refuse("x", NOT_CLOSED)

UNARY: dict[object, Operand] = {
    sps.rgamma: "rgamma",
    sps.exp1: "exp1",
    sps.expi: "expi",
    sps.spence: "spence",
    sps.zetac: X,
}
BINARY: dict[object, tuple[Operand, Operand]] = {
    sps.gammainc: (A, "gammainc_y"),
    sps.gammaincc: (A, "gammaincc_y"),
    sps.gammaincinv: (A, "gammaincinv_y"),
    sps.gammainccinv: (A, "gammainccinv_y"),
    sps.poch: ("poch_x", "poch_y"),
    sps.binom: ("binom_x", "binom_y"),
    sps.expn: (Refuse("n", INTEGER), "expn_y"),
    # zeta(x, q), Hurwitz's (a Python function calling a ufunc; scalars stay scalars); zeta(x),
    # Riemann's, has no rule: its only operand is refused
    sps.zeta: (X, "zeta_y"),
}

register(UNARY, BINARY)

# gammasgn: the sign of gamma, locally constant.
for _kind in NUMERIC:
    zero_derivative(sps.gammasgn, _kind)
register_types([sps.gammasgn])


# --------------------------------------------------------------------------------------------
# multigammaln(a, d) = d (d - 1) / 4 log(pi) + sum of gammaln(a - j / 2) for j < d: a Python
# function of an array or scalar ``a`` and an integer ``d``


def multidigamma(a: t.Any, d: t.Any) -> t.Any:
    """The sum of ``digamma(a - j / 2)`` for ``j < d``: ``multigammaln``'s derivative in a."""
    return sum(sps.digamma(a - j / 2) for j in range(int(d)))


g_multigammaln_a = grad("multigammaln_x", 2, {"multidigamma": multidigamma})
no_derivative.refuse(sps.multigammaln, 1, "d", INTEGER, keyword=True)
_rule = real_only("scipy.special.multigammaln")(tables.binary_rule(g_multigammaln_a, None))
for _kind in NUMERIC:
    primitive(sps.multigammaln, _kind, NUMBER)(_rule)
frules.register_elementwise([sps.multigammaln], (g_multigammaln_a, None), tables.SHOWN_FORMULA)


@register_type_rule(sps.multigammaln)
def _multigammaln_type(args: TypeArgs, kwargs: TypeKwargs) -> T.Type:
    """A float64 of ``a``'s shape (SciPy adds a float64 constant to the sum)."""
    if len(args) != 2 or kwargs:
        return T.ANY
    a = args[0]
    if isinstance(a, T.Const):
        a = T.typeof(a.value)
    if isinstance(a, T.Array):
        return T.Array("float64", a.ndim)
    return T.FLOAT if isinstance(a, (T.Float, T.Int)) else T.ANY


register_pure_array_function(sps.multigammaln)
