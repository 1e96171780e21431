"""The rule registry (gibbous.rules.registry): registration, lookup, specificity, ambiguity,
contexts, missing-rule messages and the operand order of pullback outputs."""

from __future__ import annotations

import operator
import pathlib
import re
import typing as t

import numpy as np
import pytest

from gibbous.ir import types as T
from gibbous.ir.core import Call, Constant, Location, Value
from gibbous.rules import inplace  # noqa: F401  (registers the in-place rules)
from gibbous.rules.registry import (
    AmbiguousRuleError,
    Context,
    DefaultContext,
    MinimalContext,
    MissingRuleError,
    Pattern,
    Pullback,
    build_primitive_rrule,
    is_primitive,
    lookup_rule,
    primitive,
    stateful_primitive,
    zero_derivative,
)
from gibbous.rules.stateful import StatefulRRule
from gibbous.tangents.model import CoDual, NoTangent, zero_coduals

NT = NoTangent()
F64, A1, A2, ANY_ARRAY = T.FLOAT, T.Array("float64", 1), T.Array("float64", 2), T.Array(None, None)
_CD = CoDual[t.Any, t.Any]


def fresh(parent: Context | None = None) -> Context:
    return Context("test", parent=parent)


def target(*args: object, **kwargs: object) -> object:
    return args[0] if args else None


def rule_named(name: str) -> t.Callable[..., t.Any]:
    def rule(f: _CD, *args: _CD, **kwargs: _CD) -> t.Any:
        return name

    rule.__qualname__ = name
    return rule


def test_registration_and_lookup() -> None:
    ctx = fresh()
    rule = primitive(target, F64, A1, ctx=ctx)(rule_named("r"))
    assert rule.__qualname__ == "r"  # the decorator returns the rule itself
    assert is_primitive(ctx, target, [F64, A1])
    assert lookup_rule(ctx, target, [F64, A1]).rule is rule
    assert build_primitive_rrule(ctx, target, [F64, A1]) is rule
    assert is_primitive(ctx, target, [T.Const(2.0), A1])  # constants are subtypes
    assert not is_primitive(ctx, target, [F64])
    assert not is_primitive(ctx, target, [F64, A1, F64])
    assert not is_primitive(ctx, target, [T.INT, A1])
    assert not is_primitive(ctx, len, [F64, A1])


def test_patterns_as_text() -> None:
    ctx = fresh()
    primitive(target, "f64[:,:]", "tuple[f64, i64]", ctx=ctx)(rule_named("r"))
    assert is_primitive(ctx, target, [A2, T.Tuple((F64, T.INT))])
    with pytest.raises(TypeError, match="only end"):
        primitive(target, ..., F64, ctx=ctx)
    with pytest.raises(TypeError, match="IR types"):
        primitive(target, float, ctx=ctx)  # type: ignore[arg-type]


def test_trailing_ellipsis_takes_any_further_arguments() -> None:
    ctx = fresh()
    primitive(target, F64, ..., ctx=ctx)(rule_named("rest"))
    assert is_primitive(ctx, target, [F64])
    assert is_primitive(ctx, target, [F64, T.STR, A2])
    assert is_primitive(ctx, target, [F64, T.INT], ["axis"])
    assert not is_primitive(ctx, target, [T.STR])


def test_keyword_patterns() -> None:
    ctx = fresh()
    primitive(target, A1, kwargs={"out": A1}, ctx=ctx)(rule_named("kw"))
    assert is_primitive(ctx, target, [A1, A1], ["out"])
    assert not is_primitive(ctx, target, [A1, A1])  # positional is another pattern
    assert not is_primitive(ctx, target, [A1, A1, T.INT], ["out", "axis"])
    assert not is_primitive(ctx, target, [A1, T.INT], ["out"])
    assert not is_primitive(ctx, target, [A1, A1], ["where"])
    with pytest.raises(ValueError):
        is_primitive(ctx, target, [A1], ["a", "b"])


def test_the_most_specific_pattern_wins() -> None:
    ctx = fresh()
    primitive(target, ANY_ARRAY, ctx=ctx)(rule_named("any array"))
    primitive(target, A2, ctx=ctx)(rule_named("matrix"))
    primitive(target, T.ANY, ctx=ctx)(rule_named("anything"))
    primitive(target, ..., ctx=ctx)(rule_named("any call"))
    primitive(target, A2, kwargs={"axis": T.INT}, ctx=ctx)(rule_named("with axis"))
    primitive(target, A2, ..., ctx=ctx)(rule_named("matrix and more"))

    def found(*types: T.Type, kw: t.Sequence[str] = ()) -> object:
        return lookup_rule(ctx, target, list(types), kw).rule.__qualname__

    assert found(A2) == "matrix"
    assert found(A1) == "any array"
    assert found(T.STR) == "anything"
    assert found() == "any call"
    assert found(A2, T.INT, kw=["axis"]) == "with axis"
    assert found(A2, T.BOOL, kw=["axis"]) == "with axis"
    assert found(A2, T.STR, kw=["axis"]) == "matrix and more"
    assert found(A1, A1) == "any call"


def test_incomparable_patterns_are_ambiguous() -> None:
    ctx = fresh()
    primitive(target, A1, T.ANY, ctx=ctx)(rule_named("first"))
    primitive(target, T.ANY, A1, ctx=ctx)(rule_named("second"))
    assert lookup_rule(ctx, target, [A1, F64]).rule.__qualname__ == "first"
    assert is_primitive(ctx, target, [A1, A1])
    with pytest.raises(AmbiguousRuleError) as info:
        lookup_rule(ctx, target, [A1, A1])
    message = str(info.value)
    assert f"{__name__}.target(f64[:], f64[:])" in message
    assert "target(f64[:], any)" in message and "target(any, f64[:])" in message
    primitive(target, A1, A1, ctx=ctx)(rule_named("tie breaker"))
    assert lookup_rule(ctx, target, [A1, A1]).rule.__qualname__ == "tie breaker"


def test_reregistering_a_pattern_replaces_it() -> None:
    ctx = fresh()
    primitive(target, F64, ctx=ctx)(rule_named("old"))
    primitive(target, F64, ctx=ctx)(rule_named("new"))
    assert len(ctx.registrations(target)) == 1
    assert lookup_rule(ctx, target, [F64]).rule.__qualname__ == "new"


def test_contexts_see_their_parents_and_not_their_children() -> None:
    assert DefaultContext.parent is MinimalContext and MinimalContext.parent is None
    minimal = fresh()
    default = fresh(minimal)
    primitive(target, F64, ctx=minimal)(rule_named("minimal"))
    primitive(target, A1, ctx=default)(rule_named("default"))
    assert is_primitive(default, target, [F64]) and is_primitive(default, target, [A1])
    assert is_primitive(minimal, target, [F64]) and not is_primitive(minimal, target, [A1])
    # Equal patterns: the nearer context wins.  A more specific one wins wherever it is.
    primitive(target, F64, ctx=default)(rule_named("default f64"))
    assert lookup_rule(default, target, [F64]).rule.__qualname__ == "default f64"
    assert lookup_rule(minimal, target, [F64]).rule.__qualname__ == "minimal"
    primitive(target, ANY_ARRAY, ctx=default)(rule_named("default arrays"))
    primitive(target, A1, ctx=minimal)(rule_named("minimal f64[:]"))
    assert lookup_rule(default, target, [A1]).rule.__qualname__ == "default"
    assert lookup_rule(minimal, target, [A1]).rule.__qualname__ == "minimal f64[:]"
    assert lookup_rule(default, target, [A2]).rule.__qualname__ == "default arrays"


def test_the_builtin_contexts() -> None:
    def only_minimal(x: float) -> float:
        return x

    primitive(only_minimal, F64, ctx=MinimalContext)(rule_named("m"))
    assert is_primitive(DefaultContext, only_minimal, [F64])
    assert is_primitive(MinimalContext, only_minimal, [F64])
    assert is_primitive(DefaultContext, np.matmul, [A2, A2, A2], ["out"])
    assert not is_primitive(MinimalContext, np.matmul, [A2, A2, A2], ["out"])


def test_missing_rule_error_says_what_and_how() -> None:
    ctx = fresh(DefaultContext)
    with pytest.raises(MissingRuleError) as info:
        lookup_rule(ctx, np.matmul, [A2, T.Array("int64", 2), A2], ["out"])
    message = str(info.value)
    assert "numpy.matmul(f64[:,:], i64[:,:], out=f64[:,:])" in message
    assert "rules exist for:" in message and "numpy.matmul(f64[:,:], f64[:,:], out=f64[:,:])" in (
        message
    )
    assert "@gibbous.primitive(numpy.matmul, 'f64[:,:]', 'i64[:,:]', kwargs={'out': 'f64[:,:]'})" in (
        message
    )
    assert "def rrule(f, x0, x1, out):" in message
    assert "one rdata per operand" in message
    error = info.value
    assert error.fn is np.matmul and error.kwnames == ("out",)

    def local_helper(x: object) -> object:
        return x

    with pytest.raises(MissingRuleError) as info2:
        build_primitive_rrule(
            DefaultContext, local_helper, [T.List(F64)], loc=Location("model.py", 12)
        )
    message = str(info2.value)
    assert "local_helper(list[f64]) at model.py:12 in DefaultContext" in message
    assert "rules exist" not in message
    assert "@gibbous.primitive(" in message and "'list[f64]'" in message


def test_missing_rule_message_for_a_call_without_arguments() -> None:
    with pytest.raises(MissingRuleError, match=r"@gibbous.primitive\(builtins.input\)"):
        lookup_rule(fresh(), input, [])


def test_zero_derivative_rules() -> None:
    ctx = fresh()
    rule = zero_derivative(len, T.List(T.ANY), ctx=ctx)
    assert lookup_rule(ctx, len, [T.List(F64)]).kind == "zero_derivative"
    assert build_primitive_rrule(ctx, len, [T.List(F64)]) is rule
    (f, xs) = zero_coduals(len, [1.0, 2.0])
    y, pullback = rule(f, xs)
    assert y.primal == 2 and y.fdata is NT
    assert pullback(NT) == (NT, NT)

    def make_list(n: int, *, fill: float) -> list[float]:
        return [fill] * n

    zero_derivative(make_list, T.INT, kwargs={"fill": F64}, ctx=ctx)
    rule2 = build_primitive_rrule(ctx, make_list, [T.INT, F64], ["fill"])
    y, pullback = rule2(*zero_coduals(make_list, 3), fill=CoDual(0.5, NT))
    assert y.primal == [0.5] * 3 and y.fdata == [0.0] * 3  # can be mutated later
    assert pullback(NT) == (NT, NT, 0.0)  # a zero of each operand's kind: a float's is 0.0

    def identity(a: np.ndarray) -> np.ndarray:
        return a

    zero_derivative(identity, ANY_ARRAY, ctx=ctx)
    a = zero_coduals(np.ones(2))[0]
    y, _ = build_primitive_rrule(ctx, identity, [A1])(CoDual(identity, NT), a)
    assert y.primal is a.primal and y.fdata is a.fdata


class _State:
    pass


def test_stateful_registrations_build_one_rule_per_call_site() -> None:
    ctx = fresh()

    @stateful_primitive(target, F64, state_type=_State, ctx=ctx)
    def stateful(state: _State | None, f: _CD, x: _CD) -> tuple[_CD, Pullback, _State]:
        return x, lambda dy: (NT, dy), state or _State()

    assert getattr(stateful, "__name__") == "stateful"  # the decorator returns the rule
    registration = lookup_rule(ctx, target, [F64])
    assert registration.kind == "stateful" and registration.state_type is _State
    one = build_primitive_rrule(ctx, target, [F64])
    two = build_primitive_rrule(ctx, target, [F64])
    assert isinstance(one, StatefulRRule) and isinstance(two, StatefulRRule) and one is not two
    assert one.rule is stateful and one.state_type is _State
    y, pullback = one(CoDual(target, NT), CoDual(2.0, NT))
    assert y.primal == 2.0 and pullback(1.5) == (NT, 1.5)
    assert "stateful" in repr(one)


def test_pullback_outputs_follow_the_ir_call_operands() -> None:
    # np.multiply(s, y, out=z): operands [callee, s, y, z]; the pullback's i-th entry is the
    # rdata for operand i, so the AD pass routes adjoints by index.
    s, y, z = Value(F64, name="s"), Value(A1, name="y"), Value(A1, name="z")
    call = Call(Constant(np.multiply), [s, y], {"out": z})
    assert call.operands == (call.callee, s, y, z)
    arg_types = [v.type for v in call.operands[1:]]
    rule = build_primitive_rrule(DefaultContext, np.multiply, arg_types, call.kwnames)
    rng = np.random.default_rng(0)
    yv = rng.standard_normal(3)
    f, cs, cy, cz = zero_coduals(np.multiply, 2.0, yv, np.zeros(3))
    out, pullback = rule(f, cs, cy, out=cz)
    cz.fdata[...] = 1.0
    rdata = pullback(NT)
    assert len(rdata) == len(call.operands)
    index = call.operands.index(s)
    assert rdata[index] == pytest.approx(float(np.sum(yv)))  # d sum(s * y) / ds
    assert all(rdata[i] is NT for i in range(len(rdata)) if i != index)
    np.testing.assert_allclose(cy.fdata, 2.0)  # arrays: added into fdata, not returned


def test_in_place_operator_rules_are_stateful_for_array_targets_only() -> None:
    assert lookup_rule(DefaultContext, operator.iadd, [A2, A1]).kind == "stateful"
    assert lookup_rule(DefaultContext, operator.iadd, [A2, F64]).kind == "stateful"
    target = T.Array("float32", 3)
    assert lookup_rule(DefaultContext, operator.itruediv, [target, T.INT]).kind == "stateful"
    # On floats `+=` rebinds: the plain scalar rule (from the primitive library), never stateful.
    if is_primitive(DefaultContext, operator.iadd, [F64, F64]):
        assert lookup_rule(DefaultContext, operator.iadd, [F64, F64]).kind != "stateful"
    assert not is_primitive(DefaultContext, operator.iadd, [A2, T.Array("float32", 2)])


def test_pattern_order() -> None:
    def p(*items: t.Any, **kw: T.Type) -> Pattern:
        return Pattern.make(items, kw)

    assert p(A2).within(p(ANY_ARRAY)) and not p(ANY_ARRAY).within(p(A2))
    assert p(A2).within(p(A2, ...)) and not p(A2, ...).within(p(A2))
    assert p(A2, F64).within(p(A2, ...))
    assert p(A2, out=A2).within(p(A2, ...))
    assert not p(A2, out=A2).within(p(A2))
    assert p(A2, ..., out=A2).within(p(A2, ...))
    assert not p(A2, ...).within(p(A2, ..., out=A2))
    assert p(A2, ...).format(np.add) == "numpy.add(f64[:,:], ...)"


@pytest.mark.parametrize("page", ["rules.md", "tangents.md"])
def test_documentation_examples_run(page: str) -> None:
    # The ```python blocks of a page run in order, in one namespace: they must stay real.
    text = (pathlib.Path(__file__).parents[2] / "docs" / page).read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert blocks
    namespace: dict[str, object] = {"__name__": f"docs_{page.replace('.', '_')}"}
    for block in blocks:
        exec(compile(block, f"docs/{page}", "exec"), namespace)
