"""SciPy: the rule of ``scipy.linalg.solve_sylvester(a, b, q)``, the ``X`` of
``A X + X B = Q`` (one matrix each, real or complex), and ``solve_continuous_lyapunov(a, q)``
(``A X + X A^H = Q``) as a twin of it.

Forward: ``A dX + dX B = dQ - dA X - X dB``, another Sylvester equation, written into the
forward program (a Hessian-vector product differentiates it again).  Reverse: the adjoint
equation ``A^H Y + Y B^H = G`` gives ``Q``'s gradient ``Y``, then ``A`` gets ``-Y X^H`` and
``B`` gets ``-X^H Y``.
"""

from __future__ import annotations

import types
import typing as t

import numpy as np
import scipy.linalg as sla

from gibbous.infer.implementations import register_twin
from gibbous.infer.typerules.numpy import DataArgs, sampled_numpy
from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.ir.purity import register_pure_array_function
from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    RuleResult,
    cotangent,
    needs,
    new_fdata,
    send,
    zero_for,
)
from gibbous.library.linalg.decompositions import dagger
from gibbous.rules.matrix_formulas import (
    Operands,
    Options,
    TangentFormula,
    call,
    register_formula,
)
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual


def solve_sylvester_rrule(f: CD, a: CD, b: CD, q: CD) -> RuleResult:
    ap, bp, qp = a.primal, b.primal, q.primal
    if not all(isinstance(m, np.ndarray) and m.ndim == 2 for m in (ap, bp, qp)):
        raise UnsupportedArgumentError("scipy.linalg.solve_sylvester of batches of matrices: no rule")
    x = f.primal(ap, bp, qp)
    xf = new_fdata(x)

    def pullback(dx: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(xf, dx)
        if g is None or not (needs(a) or needs(b) or needs(q)):
            return (NT, zero_for(a), zero_for(b), zero_for(q))
        y = sla.solve_sylvester(dagger(ap), dagger(bp), g)
        return (
            NT,
            send(a, -y @ dagger(x)) if needs(a) else zero_for(a),
            send(b, -dagger(x) @ y) if needs(b) else zero_for(b),
            send(q, y) if needs(q) else zero_for(q),
        )

    return CoDual(x, xf), pullback


primitive(sla.solve_sylvester, ARRAY, ARRAY, ARRAY)(solve_sylvester_rrule)


def _sylvester_tangent(x: t.Any, ops: Operands, d: Operands, options: Options) -> t.Any:
    (a, b, _), (da, db, dq) = ops, d
    rhs = dq
    for change in (None if da is None else da @ x, None if db is None else x @ db):
        if change is not None:
            rhs = -change if rhs is None else rhs - change
    return None if rhs is None else call(sla.solve_sylvester, a, b, rhs)


register_formula(
    TangentFormula(
        sla.solve_sylvester, "scipy.linalg.solve_sylvester", _sylvester_tangent, operands=3,
        holomorphic=True,
    )  # fmt: skip
)
register_type_rule(sla.solve_sylvester)(sampled_numpy(sla.solve_sylvester, DataArgs(3)))
register_pure_array_function(sla.solve_sylvester)


def solve_continuous_lyapunov(a: t.Any, q: t.Any) -> t.Any:
    """``scipy.linalg.solve_continuous_lyapunov``: ``A X + X A^H = Q``."""
    a, q = np.asarray(a), np.asarray(q)
    return sla.solve_sylvester(a, np.conj(a.T), q)


register_twin(sla.solve_continuous_lyapunov, t.cast(types.FunctionType, solve_continuous_lyapunov))
