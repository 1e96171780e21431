"""The elementwise rules' quick path for real arrays against their general path, operand by
operand: the same fdata and rdata for every mix of shapes (equal, a broadcast row, a column,
0-d), scalars (floats, ints), integer, boolean and float32 arrays, and inactive operands."""

from __future__ import annotations

import operator
import typing as t

import numpy as np
import pytest

from gibbous.ir import types as T
from gibbous.rules.prims import elementwise as E
from gibbous.rules.registry import DefaultContext, MissingRuleError, build_primitive_rrule
from gibbous.rules.tangents import NO_TANGENT, CoDual

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


def run(op: t.Any, x: t.Any, y: t.Any, inactive: set[int], g: np.ndarray) -> list[t.Any]:
    """Forward and pullback of ``op(x, y)``: the operands' fdata afterwards and the rdata."""
    rule = build_primitive_rrule(
        DefaultContext, op, [T.typeof(x), T.typeof(y)], ()
    )  # the rule the AD pass would pick

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
def test_the_quick_path_agrees_with_the_general_path(
    op: t.Any, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = operands(rng)
    g = rng.standard_normal((3, 4))
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
                with monkeypatch.context() as m:
                    m.setattr(E, "_real_operand", lambda p: False)  # the general path only
                    general = run(op, x, y, inactive, g)
        except MissingRuleError:  # not every callable takes every mix (copysign of bools)
            continue
        for got, want in zip(quick, general):
            assert type(got) is type(want), (a, b)
            if isinstance(want, (np.ndarray, np.generic, float)):
                np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{op.__name__}{a, b}")
