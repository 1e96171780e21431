"""Properties on random IR: every pass keeps it valid and printable and reaches its fixed
point; constant folding computes what Python computes."""

from __future__ import annotations

import builtins
import math
import operator
import typing as t
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Function, Return
from gibbous.ir.parser import parse
from gibbous.ir.types import Const
from gibbous.passes import PassManager
from tests.ir.strategies import functions, hashable_constants

SINGLE = ["dce", "fold", "cse", "simplify-cfg"]
COMBINED = "fold, cse, dce, simplify-cfg"


# Generating functions is the slow part, so each one goes through every pipeline (on copies).
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(f=functions())
def test_passes_keep_ir_valid_and_stop(f: Function) -> None:
    original = str(f)
    for name in SINGLE:
        g = parse(original)
        PassManager([name], verify=True).run(g)  # raises PassError on invalid IR
        text = str(g)
        assert str(parse(text)) == text, name  # folded constants have a text form
        # The pass iterated to its fixed point: once more changes nothing.
        assert not PassManager([name], verify=True).run(g), name
        assert str(g) == text, name
    g = parse(original)
    PassManager(COMBINED, verify=True).run(g)
    assert str(parse(str(g))) == str(g)


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.eq, operator.lt, operator.getitem,
          operator.contains, operator.and_, operator.lshift, np.add, np.multiply, np.power,
          np.maximum, math.atan2, math.pow, builtins.divmod, builtins.round]  # fmt: skip


# Mostly small numbers, so that many calls fold; any constant now and then.
OPERANDS = st.one_of(
    st.integers(-20, 20), st.floats(), st.booleans(), st.text(max_size=3), hashable_constants()
)


@settings(max_examples=300, deadline=None)
@given(fn=st.sampled_from(BINARY), a=OPERANDS, b=OPERANDS)
def test_fold_gives_what_python_gives(
    fn: t.Callable[[object, object], object], a: object, b: object
) -> None:
    f = Function("f", [])
    builder = Builder(f)
    builder.ret(builder.call(fn, a, b, name="r"))
    PassManager(["fold"], verify=True).run(f)
    ret = f.entry.terminator
    assert isinstance(ret, Return)
    if not isinstance(ret.value, Constant):
        return  # not folded: fine whatever the reason
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = fn(a, b)  # folding succeeded, so this cannot raise
    assert Const(ret.value.value) == Const(expected)
