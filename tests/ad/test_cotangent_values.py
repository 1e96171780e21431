"""Cotangents passed as values between array forms (issue 14, point 3): a float64 array
result used once, by another array form of its block, gets no fdata; the use's adjoint hands
its cotangent on, and the producer's adjoint reads it.  Checked against the same functions
with every rule called (no forms at all) and against finite differences."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.inspect import code_ir, rule_table
from gibbous.ir import types as T
from gibbous.tangents import pool
from gibbous.rules.registry import Context, DefaultContext, lookup_rule
from tests.ad.test_array_forms import central
from tests.ad.test_product_forms import register_without_form

Array = np.ndarray[t.Any, t.Any]
rng = np.random.default_rng(11)
W = rng.uniform(0.5, 1.5, (3, 4))


def chain(x: Array, c: float) -> float:
    # Every intermediate used once, with broadcasting (a row, a scalar) and a float operand.
    return float(np.sum(np.exp(np.sin(x * W[0]) - c) * W + 1.5))


def shared(x: Array) -> float:
    # ``a + b`` hands the one cotangent on to both; each of them reads it.
    return float(np.sum(np.sin(x) + np.cos(x) * 2.0))


def mixed(x: Array, y: Array) -> float:
    h = np.tanh(x * y)  # used thrice: fdata; its operand ``x * y``, used once: a value
    r = h * h - h / (1.0 + y * y)
    return float(np.mean(r * W))


def column_row(x: Array, y: Array) -> float:
    # Cotangents summed back to a column and a row, passed as values.
    return float(np.sum(np.exp(x - y) * (x + y)))


def looped(x: Array) -> float:
    # Values within a block; what crosses an iteration keeps its fdata.
    s = x
    for _ in range(3):
        s = np.sin(s * 0.9 + 0.1) * 1.1
    return float(np.sum(s * s))


BATCH = rng.standard_normal((5, 3))


def layer(W: Array, b: Array, V: Array) -> float:
    # Products whose cotangents go by value: into ``+ b`` and out of ``tanh``.
    return float(np.sum((np.tanh(BATCH @ W + b) @ V) ** 2))


def recurrent(W: Array, h: Array) -> float:
    for _ in range(3):  # ``W @ h`` by value into ``tanh``; ``h`` carried: fdata
        h = np.tanh(W @ h + 0.1)
    return float(np.sum(h))


CASES: list[tuple[t.Callable[..., float], list[t.Any]]] = [
    (layer, [rng.standard_normal((3, 4)) / 2, rng.standard_normal(4), rng.standard_normal((4, 2))]),
    (recurrent, [rng.standard_normal((3, 3)) / 2, rng.standard_normal(3)]),
    (chain, [rng.uniform(0.5, 1.5, (3, 4)), 0.3]),
    (shared, [rng.uniform(-1, 1, 5)]),
    (mixed, [rng.uniform(0.5, 1.5, (3, 4)), rng.uniform(0.5, 1.5, 4)]),
    (column_row, [rng.uniform(0.5, 1.5, (3, 1)), rng.uniform(0.5, 1.5, 4)]),
    (looped, [rng.uniform(-1, 1, 6)]),
]


def without_forms(args: t.Sequence[object], *fns: t.Callable[..., float]) -> Context:
    """A context in which every registration the functions' array forms come from is
    registered again without its form: every array operation a called rule."""
    ctx = Context("called", parent=DefaultContext)
    seen = set()
    for fn in fns:
        for row in rule_table(fn, *args):
            if row.kind != "inline":
                continue
            seen.add(row.callee)
    for name in seen:
        module, _, attr = name.rpartition(".")
        callee = getattr(__import__(module, fromlist=[attr]), attr)
        for reg in DefaultContext.registrations(callee):
            if reg.inline is not None and reg.inline.array:
                register_without_form(ctx, callee, reg)
    return ctx


@pytest.mark.parametrize("f, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_values_agree_with_called_rules_and_finite_differences(
    f: t.Callable[..., float], args: list[t.Any]
) -> None:
    forward = str(code_ir(f, *args, stage="forward"))
    assert "WANT" not in forward  # (only the reverse asks for values)
    reverse = str(code_ir(f, *args, stage="reverse"))
    assert "registered.WANT" in reverse  # some cotangent goes by value
    inline_rule = gibbous.build_rrule(f, *args)
    called_rule = gibbous.build_rrule(f, *args, ctx=without_forms(args, f))
    for _ in range(2):
        y1, g1 = gibbous.value_and_gradient(inline_rule, f, *args)
        y2, g2 = gibbous.value_and_gradient(called_rule, f, *args)
    assert y1 == y2
    for k, arg in enumerate(args):
        np.testing.assert_allclose(g1[1 + k], g2[1 + k], rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(g1[1 + k], central(f, args, k), rtol=1e-6, atol=1e-7)


def test_a_value_used_once_gets_no_fdata() -> None:
    """In ``chain`` only the argument's fdata is read; no zeros are made for the five
    intermediates (each used once)."""
    args = dict(CASES)
    forward = str(code_ir(chain, *args[chain], stage="forward"))
    assert "new_fdata" not in forward
    forward = str(code_ir(mixed, *args[mixed], stage="forward"))
    assert forward.count("new_fdata") == 1  # ``h``, used three times


def large_sum(x: Array) -> float:
    return float(np.sum(np.exp(x * 0.5) * 2.0) + np.mean(np.sin(x)))


def test_a_large_summed_array_gets_a_read_only_cotangent() -> None:
    """Above 4096 elements the sum's cotangent is one number seen at every index (read-only):
    the adjoints that read it agree with the called rules and with finite differences."""
    x = rng.uniform(-1, 1, 5000)
    rule = gibbous.build_rrule(large_sum, x)
    called_rule = gibbous.build_rrule(large_sum, x, ctx=without_forms([x], large_sum))
    _, g1 = gibbous.value_and_gradient(rule, large_sum, x)
    _, g2 = gibbous.value_and_gradient(called_rule, large_sum, x)
    np.testing.assert_allclose(g1[1], g2[1], rtol=1e-14)
    np.testing.assert_allclose(g1[1], 0.5 * 2.0 * np.exp(x * 0.5) + np.cos(x) / x.size)


def test_a_cotangent_passed_on_is_not_recycled_under_a_user() -> None:
    """``r = h * h - d``: the subtraction hands ``r``'s fdata on, as a value, to ``h * h`` and
    to ``d``; the pool must not take that array back while they still read it."""

    def f(x: Array) -> float:
        r = np.tanh(x) * np.tanh(x) - np.sin(x)
        return float(np.sum(r * r))

    pool.clear()
    x = rng.uniform(-1, 1, (64, 512))  # 256 KiB: arrays the pool keeps
    rule = gibbous.build_rrule(f, x)
    called_rule = gibbous.build_rrule(f, x, ctx=without_forms([x], f))
    for _ in range(3):
        _, g1 = gibbous.value_and_gradient(rule, f, x)
        _, g2 = gibbous.value_and_gradient(called_rule, f, x)
        np.testing.assert_allclose(g1[1], g2[1], rtol=1e-13)
    pool.clear()


def test_the_ufunc_forms_take_part() -> None:
    reg = lookup_rule(DefaultContext, np.sin, [T.typeof(np.ones(2))])
    assert reg.inline is not None and reg.inline.values


def random_program(seed: int) -> str:
    """A straight-line function of a matrix ``x``, a row ``y`` and a float ``c``: ufuncs and
    operators on earlier values, each picked again with some chance (values used once, twice,
    not at all; broadcasting between the row and the matrix)."""
    r = np.random.default_rng(seed)
    names, lines = ["x", "y"], []
    unary = ["np.sin({})", "np.cos({})", "np.tanh({})", "-{}", "{} ** 2", "np.square({})"]
    binary = ["{} + {}", "{} - {}", "{} * {}", "np.maximum({}, {})"]
    scalar = ["{} * c", "c - {}", "{} + 1.5", "2 * {}", "{} / 2.0"]
    for k in range(int(r.integers(3, 9))):
        pick = lambda: names[int(r.integers(len(names)))]  # noqa: E731
        kind = r.random()
        if kind < 0.35:
            expr = r.choice(unary).format(pick())
        elif kind < 0.75:
            expr = r.choice(binary).format(pick(), pick())
        else:
            expr = r.choice(scalar).format(pick())
        lines.append(f"    v{k} = {expr}")
        names.append(f"v{k}")
    tail = " + ".join(f"np.sum({n} * {n[-1]}.0)" if n[-1].isdigit() else f"np.sum({n})"
                      for n in names[-2:])  # fmt: skip
    return "def f(x, y, c):\n" + "\n".join(lines) + f"\n    return float({tail})\n"


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_agree_with_called_rules(seed: int) -> None:
    source = random_program(seed)
    namespace: dict[str, t.Any] = {"np": np}
    exec(compile(source, f"<random {seed}>", "exec"), namespace)
    f = namespace["f"]
    args = [rng.uniform(0.2, 1.2, (3, 4)), rng.uniform(0.2, 1.2, 4), 0.7]
    inline_rule = gibbous.build_rrule(f, *args)
    called_rule = gibbous.build_rrule(f, *args, ctx=without_forms(args, f))
    for _ in range(2):
        y1, g1 = gibbous.value_and_gradient(inline_rule, f, *args)
        y2, g2 = gibbous.value_and_gradient(called_rule, f, *args)
    assert y1 == y2, source
    for k in range(3):
        np.testing.assert_allclose(g1[1 + k], g2[1 + k], rtol=1e-12, atol=1e-13, err_msg=source)
    np.testing.assert_allclose(g1[1], central(f, args, 0), rtol=1e-5, atol=1e-6, err_msg=source)


DATA = rng.standard_normal((5, 3))


def data_rows(w: Array) -> float:
    s = 0.0
    for t in range(5):
        s = s + float(np.sum(np.sin(DATA[t] * w)))
    return s


def test_an_inactive_operand_needs_no_codual() -> None:
    """``DATA[t] * w``: the row of data has no fdata; the forward program makes no CoDual to
    find that out (one per iteration)."""
    w = rng.uniform(-1, 1, 3)
    forward = str(code_ir(data_rows, w, stage="forward"))
    assert forward.count("inactive_codual") == 1  # the float returned, wrapped at the return
    rule = gibbous.build_rrule(data_rows, w)
    _, g = gibbous.value_and_gradient(rule, data_rows, w)
    np.testing.assert_allclose(g[1], central(data_rows, [w], 0), rtol=1e-6, atol=1e-8)
