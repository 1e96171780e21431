"""The elementwise rules' variants chosen from static types (``real_array_binary``,
``float_binary``) against the general rule, operand by operand: the same fdata and rdata for
every mix of shapes (equal, a broadcast row, a column, 0-d), scalars (floats, ints), integer,
boolean and float32 arrays, and inactive operands."""

from __future__ import annotations

import math
import operator
import typing as t

import numpy as np
import pytest

from gibbous.ir import types as T
from gibbous.library.elementwise import tables
from gibbous.library.common import ARRAY, NUMBER
from gibbous.rules.registry import (
    DefaultContext,
    MissingRuleError,
    build_primitive_rrule,
    lookup_rule,
)
from gibbous.tangents.model import NO_TANGENT, CoDual

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, np.maximum,
       np.arctan2, np.hypot, np.logaddexp, np.copysign, np.fmod]  # fmt: skip


def operands(rng: np.random.Generator) -> dict[str, t.Any]:
    return {
        "matrix": rng.uniform(0.5, 1.5, (3, 4)),
        "row": rng.uniform(0.5, 1.5, 4),
        "column": rng.uniform(0.5, 1.5, (3, 1)),
        "0-d": np.asarray(rng.uniform(0.5, 1.5)),
        "float": float(rng.uniform(0.5, 1.5)),
        "float64": np.float64(rng.uniform(0.5, 1.5)),
        "int": 2,
        "ints": np.arange(1, 13).reshape(3, 4),
        "bools": np.arange(12).reshape(3, 4) % 2 == 0,
        "float32": rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32),
        "inactive": rng.uniform(0.5, 1.5, (3, 4)),
    }


def types(x: t.Any, y: t.Any, general: bool) -> list[T.Type]:
    """The operands' types, or for ``general`` the types only the general rule matches."""
    if general:
        return [ARRAY if isinstance(v, np.ndarray) else NUMBER for v in (x, y)]
    return [T.typeof(x), T.typeof(y)]


def run(
    op: t.Any, x: t.Any, y: t.Any, inactive: set[int], g: np.ndarray, general: bool = False
) -> list[t.Any]:
    """Forward and pullback of ``op(x, y)``: the operands' fdata afterwards and the rdata."""
    rule = build_primitive_rrule(DefaultContext, op, types(x, y, general), ())

    def codual(i: int, v: t.Any) -> CoDual[t.Any, t.Any]:
        active = isinstance(v, np.ndarray) and v.dtype.kind == "f" and i not in inactive
        return CoDual(v, np.zeros_like(v) if active else NO_TANGENT)

    cx, cy = codual(0, x), codual(1, y)
    z, pullback = rule(CoDual(op, NO_TANGENT), cx, cy)
    if isinstance(z.fdata, np.ndarray):
        z.fdata[...] = g
    rdata = pullback(NO_TANGENT if isinstance(z.fdata, np.ndarray) else g)
    return [cx.fdata, cy.fdata, *rdata[1:]]


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_the_variants_agree_with_the_general_rule(op: t.Any, rng: np.random.Generator) -> None:
    values = operands(rng)
    g = rng.standard_normal((3, 4))
    variants = 0
    for a, b in [("matrix", "matrix"), ("matrix", "row"), ("column", "row"), ("matrix", "0-d"),
                 ("float", "matrix"), ("matrix", "float64"), ("matrix", "int"),
                 ("ints", "matrix"), ("matrix", "bools"), ("float32", "matrix"),
                 ("inactive", "row"), ("row", "matrix")]:  # fmt: skip
        x, y = values[a], values[b]
        inactive = {0} if a == "inactive" else set()
        with np.errstate(all="ignore"):
            z = op(x, y)
        if not (isinstance(z, np.ndarray) and z.dtype.kind == "f" and z.shape == (3, 4)):
            continue
        try:
            with np.errstate(all="ignore"):
                quick = run(op, x, y, inactive, g)
                general = run(op, x, y, inactive, g, general=True)
        except MissingRuleError:  # not every callable takes every mix (copysign of bools)
            continue
        chosen = lookup_rule(DefaultContext, op, types(x, y, False)).variant
        variants += chosen is not None
        for got, want in zip(quick, general):
            assert type(got) is type(want), (a, b)
            if isinstance(want, (np.ndarray, np.generic, float)):
                np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{op.__name__}{a, b}")
    if op is not np.copysign:  # NumPy's copysign has no rule (math.copysign has)
        assert variants >= 7  # matrix/matrix, matrix/row, column/row, float/matrix, ...


SCALARS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
           np.arctan2, np.hypot, np.power, math.atan2, math.pow, np.logaddexp]  # fmt: skip


@pytest.mark.parametrize("op", SCALARS, ids=lambda f: f.__name__)
def test_float_binary_agrees_with_the_general_rule(op: t.Any) -> None:
    for x, y in [(1.3, 0.7), (np.float64(1.3), 0.7), (1.3, 2), (2, np.float64(0.7)),
                 (0.0, 0.0)]:  # fmt: skip
        try:
            with np.errstate(all="ignore"):
                z = op(x, y)
        except (ArithmeticError, ValueError):
            continue
        assert lookup_rule(DefaultContext, op, types(x, y, False)).variant == "float_binary"
        with np.errstate(all="ignore"):
            quick = run(op, x, y, set(), np.float64(0.6))
            general = run(op, x, y, set(), np.float64(0.6), general=True)
        for got, want in zip(quick[2:], general[2:]):
            if want is NO_TANGENT:  # an int operand
                assert got is NO_TANGENT
                continue
            assert type(got) is type(want) or {type(got), type(want)} <= {float, np.float64}
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{op.__name__}{x, y}")
        del z


UNARY = [np.sin, np.exp, np.log, np.sqrt, np.tanh, np.abs, np.negative, math.sin, math.exp,
         operator.neg, np.arcsin, np.cbrt]  # fmt: skip


@pytest.mark.parametrize("fn", UNARY, ids=lambda f: f.__name__)
def test_unary_variants_agree_with_the_general_rule(fn: t.Any, rng: np.random.Generator) -> None:
    compared = 0
    for x in [0.4, np.float64(0.4), rng.uniform(0.1, 0.9, (3, 4)), np.asarray(0.4), 0.0]:
        try:
            with np.errstate(all="ignore"):
                fn(x)
        except (TypeError, ValueError):  # math functions of arrays
            continue
        try:
            registration = lookup_rule(DefaultContext, fn, [T.typeof(x)])
        except MissingRuleError:  # math.sin of a 0-d array
            continue
        if registration.variant is None:
            continue
        compared += 1
        results = []
        for general in (False, True):
            ty = [(ARRAY if isinstance(x, np.ndarray) else NUMBER) if general else T.typeof(x)]
            rule = build_primitive_rrule(DefaultContext, fn, ty, ())
            active = isinstance(x, np.ndarray)
            cx = CoDual(x, np.zeros_like(x) if active else NO_TANGENT)
            with np.errstate(all="ignore"):
                z, pullback = rule(CoDual(fn, NO_TANGENT), cx)
                if isinstance(z.fdata, np.ndarray):
                    z.fdata[...] = 0.6
                rdata = pullback(NO_TANGENT if isinstance(z.fdata, np.ndarray) else 0.6)
            results.append((cx.fdata, rdata[1]))
        (qf, qr), (gf, gr) = results
        if isinstance(gf, np.ndarray):
            np.testing.assert_allclose(qf, gf, rtol=1e-12)
        assert type(qr) is type(gr), (fn, x)
        if isinstance(gr, (float, np.generic)):
            np.testing.assert_allclose(qr, gr, rtol=1e-12)
    assert compared >= 1
