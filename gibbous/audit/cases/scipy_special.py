"""Cases for ``gibbous.library.scipy.bessel``, ``gammas`` and ``elementary``: scipy.special's
elementwise functions registered from tables.  Without SciPy there are none.

Each function runs on what each of its registrations takes: a float64 array (its variant),
float32 arrays and scalars (the general rule's), Python floats, and for two operands every
array/scalar mix, with an int on either side where the variant takes one.  Orders, degrees
and other refused operands (``jv``'s ``v``, ``gammainc``'s ``a``) are ints, which carry no
derivative: the rules take them as constants, and the check perturbs every float.  Values are
inside each function's smooth domain, away from kinks (``huber`` at ``|r| = delta``) and
poles; ``tests/library/scipy/test_special_functions.py`` covers the edges.
"""

from __future__ import annotations

import importlib.util
import typing as t

import numpy as np

from gibbous.testing import case
from gibbous.testing.cases import RuleCase

CASES: list[RuleCase] = []

Array = np.ndarray[t.Any, t.Any]


def _f32(x: Array) -> Array:
    return x.astype(np.float32)


def _unary(fn: t.Any, x: Array) -> list[RuleCase]:
    """A float64 array, float32 arrays, a float and a float32 scalar (and a 0-d array)."""
    return [
        case(fn, x),
        case(fn, _f32(x)),
        case(fn, np.array(x.flat[1])),
        case(fn, float(x.flat[2])),
        case(fn, np.float32(x.flat[0])),
    ]


def _binary(fn: t.Any, x: Array, y: Array, ints: tuple[int, int]) -> list[RuleCase]:
    """Every array/scalar mix: float64 arrays (broadcast, and with a float or an int of
    ``ints``, on either side), float32 arrays and scalars, floats."""
    return [
        case(fn, x, y),
        case(fn, x[:, None], y[None, :]),
        case(fn, x, float(y[1])),
        case(fn, x, ints[1]),
        case(fn, float(x[0]), y),
        case(fn, ints[0], y),
        case(fn, _f32(x), _f32(y)),
        case(fn, _f32(x), np.float32(y[2])),
        case(fn, np.float32(x[1]), _f32(y)),
        case(fn, float(x[2]), float(y[0])),
    ]


def _refused_first(fn: t.Any, n: Array, y: Array) -> list[RuleCase]:
    """A function whose first operand is refused (an order, a shape): ints there, in every
    array/scalar mix, with float64 and float32 operands."""
    return [
        case(fn, n, y),
        case(fn, n[:, None], y[None, :]),
        case(fn, n, float(y[1])),
        case(fn, int(n[1]), y),
        case(fn, int(n[2]), _f32(y)),
        case(fn, int(n[0]), float(y[2])),
    ]


if importlib.util.find_spec("scipy") is not None:
    import scipy.special as sps

    _pos = np.array([0.4, 1.3, 2.2, 4.5])  # (0, inf)
    _any = np.array([-1.7, -0.4, 0.6, 2.1])
    _unit = np.array([0.15, 0.4, 0.65, 0.9])  # (0, 1)

    # One operand: where each is smooth.
    for _fn, _x in (
        (sps.j0, _pos), (sps.j1, _any), (sps.y0, _pos), (sps.y1, _pos), (sps.i0, _any),
        (sps.i0e, _any), (sps.i1, _any), (sps.i1e, _any), (sps.k0, _pos), (sps.k0e, _pos),
        (sps.k1, _pos), (sps.k1e, _pos),
        (sps.rgamma, np.array([-2.5, -0.3, 0.7, 3.2])), (sps.exp1, _pos), (sps.expi, _any),
        (sps.spence, np.array([0.3, 0.8, 1.4, 3.0])),
        (sps.log1p, _any / 3), (sps.expm1, _any), (sps.exp2, _any), (sps.cbrt, _pos),
        (sps.exp10, _any / 2), (sps.cosm1, _any), (sps.exprel, np.array([-0.5, 3e-3, 0.02, 1.3])),
        (sps.sindg, 40 * _any), (sps.cosdg, 40 * _any), (sps.tandg, 30 * _any),
        (sps.cotdg, 20 * _pos), (sps.dawsn, _any), (sps.erfi, _any / 2), (sps.wrightomega, _any),
        (sps.entr, _pos), (sps.log_expit, _any), (sps.ndtri_exp, -_pos),
    ):  # fmt: skip
        CASES += _unary(_fn, _x)
    CASES += [
        case(sps.log1p, _any / 3 + 0.2j),
        case(sps.expm1, complex(0.3, -0.8)),
        *(case(_fn, _x) for _fn in (sps.gammasgn, sps.round) for _x in (_any, 0.3, -1.6)),
    ]

    # Two operands, both with derivatives: every mix the variants and the general rule take.
    _delta = np.array([0.5, 1.2, 2.0, 3.5])
    _lam = np.array([-0.6, 0.003, 0.4, 1.7])
    for _fn, _x, _y, _ints in (
        (sps.huber, _delta, np.array([-1.9, 0.3, -0.8, 5.0]), (2, 1)),
        (sps.pseudo_huber, _delta, _any, (2, 1)),
        (sps.kl_div, _pos, _pos[::-1].copy(), (2, 3)),
        (sps.rel_entr, _pos, _pos[::-1].copy(), (2, 3)),
        (sps.boxcox, _pos, _lam, (2, 2)),
        (sps.boxcox1p, _pos - 0.3, _lam, (2, 2)),
        (sps.inv_boxcox, _pos, _lam / 4, (2, 2)),
        (sps.inv_boxcox1p, _pos / 2, _lam / 4, (2, 2)),
        (sps.owens_t, _any, _pos / 2, (1, 2)),
        (sps.powm1, _pos, _any, (2, 2)),
        (sps.poch, _pos + 0.5, _pos / 2, (2, 1)),
        (sps.binom, _pos + 4, _pos, (6, 2)),
    ):  # fmt: skip
        CASES += _binary(_fn, _x, _y, _ints)

    # Two operands, the first refused: integer orders, shapes and degrees.
    _n = np.array([0, 1, 2, 3])
    for _fn, _m, _y in (
        (sps.jv, _n, _pos), (sps.jve, _n - 1, _pos), (sps.yv, _n, _pos), (sps.yve, _n, _pos),
        (sps.iv, _n, _any), (sps.ive, _n - 2, _any), (sps.kv, _n, _pos), (sps.kve, _n, _pos),
        (sps.yn, _n - 1, _pos), (sps.kn, _n, _pos), (sps.struve, _n, _pos),
        (sps.modstruve, _n - 1, _pos), (sps.hyp0f1, _n + 1, _any),
        (sps.eval_hermite, _n, _any / 2), (sps.eval_hermitenorm, _n + 1, _any),
        (sps.eval_chebyt, _n + 1, _unit * 2 - 1),
        (sps.gammainc, _n + 1, _pos), (sps.gammaincc, _n + 1, _pos),
        (sps.gammaincinv, _n + 1, _unit), (sps.gammainccinv, _n + 1, _unit),
        (sps.expn, _n, _pos), (sps.zeta, _n + 2, _pos),
    ):  # fmt: skip
        CASES += _refused_first(_fn, _m, _y)
    CASES += [
        case(sps.multigammaln, _pos + 2, 3),
        case(sps.multigammaln, _f32(_pos) + 2, 2),
        case(sps.multigammaln, 2.6, 4),
    ]
