"""The NumPy backend's code generator: compiled IR agrees with the Python it stands for."""

from __future__ import annotations

import ast
import builtins
import linecache
import math
import operator
import random
import traceback
import typing as t
import warnings

import numpy as np
import pytest

from gibbous.backends.numpy import Factory, compile_function
from gibbous.backends.numpy.layout import plan
from gibbous.backends.numpy.source import RESERVED, literal
from gibbous.ir.builder import Builder
from gibbous.ir.core import Block, Branch, Call, Constant, Function, Jump, Location, Return, Value
from gibbous.ir.types import ANY, FLOAT, Array, Type
from gibbous.ir.verify import VerificationError

F64_1D = Array("float64", 1)


def source(fn: t.Callable[..., object]) -> str:
    return t.cast(str, getattr(fn, "__gibbous_source__"))


def compiled(f: Function) -> t.Callable[..., t.Any]:
    # Any SyntaxWarning (``1[0]``, ``x is 1``) would mean the generator wrote something sloppy.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn = compile_function(f)
    ast.parse(source(fn))
    return fn


def pack(*items: object) -> tuple[object, ...]:
    """Builds a tuple from IR values (a Python tuple of values would be one constant)."""
    return items


def func(name: str, *args: str | tuple[str, Type]) -> tuple[Function, Builder]:
    spec = [(a, ANY) if isinstance(a, str) else a for a in args]
    f = Function(name, spec, loc=Location(f"{name}.py", 1))
    b = Builder(f)
    return f, b


def block(b: Builder, name: str, *args: str) -> Block:
    return b.add_block(name, [(a, ANY) for a in args])


# --------------------------------------------------------------------------------------------
# Straight-line code


def test_straight_line_float_arithmetic() -> None:
    f, b = func("poly", ("x", FLOAT), ("y", FLOAT))
    x, y = f.args
    b.loc = Location("poly.py", 2)
    sq = b.call(operator.mul, x, x, type=FLOAT, name="sq")
    t1 = b.call(operator.sub, sq, y, type=FLOAT)
    t2 = b.call(operator.truediv, t1, 2.0, type=FLOAT)
    t3 = b.call(operator.pow, t2, -2, type=FLOAT)
    t4 = b.call(operator.neg, t3, type=FLOAT)
    t5 = b.call(operator.floordiv, t4, 0.5, type=FLOAT)
    t6 = b.call(operator.mod, t5, 7.0, type=FLOAT)
    b.ret(b.call(math.sqrt, t6, type=FLOAT))
    g = compiled(f)

    def reference(x: float, y: float) -> float:
        return math.sqrt((-(((x * x - y) / 2.0) ** -2) // 0.5) % 7.0)

    for xv, yv in [(3.0, 1.0), (0.5, -2.0), (10.0, 3.0)]:
        assert g(xv, yv) == reference(xv, yv)
    text = source(g)
    assert "while True" not in text
    # Every result is used once, by the next call: one expression, in the IR's order.  A
    # negative literal is parenthesised, as is the operand of a unary minus that is a power.
    assert "return sqrt(-(((x * x - y) / 2.0) ** (-2)) // 0.5 % 7.0)  # poly.py:2" in text


def test_straight_line_array_arithmetic() -> None:
    f, b = func("arr", ("W", Array("float64", 2)), ("v", F64_1D))
    W, v = f.args
    h = b.call(operator.matmul, W, v, name="h")
    th = b.call(np.tanh, h, name="th")
    sq = b.call(operator.mul, th, th)
    b.ret(b.call(np.sum, sq))
    g = compiled(f)
    rng = np.random.default_rng(0)
    Wv, vv = rng.standard_normal((4, 3)), rng.standard_normal(3)
    assert g(Wv, vv) == np.sum(np.tanh(Wv @ vv) * np.tanh(Wv @ vv))
    assert "W @ v" in source(g)


def test_unary_bitwise_and_comparison_operators() -> None:
    f, b = func("ops", "a", "b")
    a, c = f.args
    vals = [
        b.call(op, a, c)
        for op in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift)
    ]
    vals += [b.call(op, a, c) for op in (operator.lt, operator.le, operator.eq, operator.ne)]
    vals += [b.call(op, a, c) for op in (operator.gt, operator.ge)]
    vals += [b.call(op, a) for op in (operator.invert, operator.inv, operator.pos, operator.not_)]
    vals += [b.call(operator.contains, (1, 2, 3), a), b.call(operator.is_, a, None)]
    vals += [b.call(operator.is_not, a, c)]
    b.ret(b.call(pack, *vals))
    g = compiled(f)

    def reference(a: int, c: int) -> tuple[object, ...]:
        bitwise = (a & c, a | c, a ^ c, a << c, a >> c)
        compare = (a < c, a <= c, a == c, a != c, a > c, a >= c)
        return bitwise + compare + (~a, ~a, +a, not a, a in (1, 2, 3), a is None, a is not c)

    for av, cv in [(3, 1), (0, 2), (5, 5)]:
        assert g(av, cv) == reference(av, cv)
    text = source(g)
    assert "a in (1, 2, 3)" in text and "not a" in text and "a is None" in text


def test_kwargs_call() -> None:
    f, b = func("colsum", ("a", Array("float64", 2)))
    s = b.call(np.sum, f.args[0], kwargs={"axis": 0}, name="s")
    m = b.call(np.mean, f.args[0], kwargs={"axis": 1, "keepdims": True}, name="m")
    b.ret(b.call(pack, s, m))
    g = compiled(f)
    a = np.arange(6.0).reshape(2, 3)
    s_v, m_v = g(a)
    np.testing.assert_array_equal(s_v, np.sum(a, axis=0))
    np.testing.assert_array_equal(m_v, np.mean(a, axis=1, keepdims=True))
    assert "axis=0" in source(g) and "keepdims=True" in source(g)


def test_keyword_names_that_are_not_identifiers() -> None:
    def kw(**kwargs: object) -> dict[str, object]:
        return kwargs

    f, b = func("kw", "x")
    b.ret(b.call(kw, kwargs={"lambda": f.args[0], "a b": 2, "ok": 3}))
    assert compiled(f)(1) == {"lambda": 1, "a b": 2, "ok": 3}


# --------------------------------------------------------------------------------------------
# Folding single-use results into the expression that uses them


def test_nested_folding_writes_one_expression() -> None:
    f, b = func("rosen", ("x", F64_1D))
    (x,) = f.args
    b.loc = Location("opt.py", 4)
    tail = b.call(operator.getitem, x, slice(1, None), type=F64_1D)
    init = b.call(operator.getitem, x, slice(None, -1), type=F64_1D)
    a = b.call(operator.sub, tail, b.call(operator.pow, init, 2, type=F64_1D), type=F64_1D)
    b.loc = Location("opt.py", 5)
    left = b.call(operator.mul, 100, b.call(operator.pow, a, 2, type=F64_1D), type=F64_1D)
    init2 = b.call(operator.getitem, x, slice(None, -1), type=F64_1D)
    right = b.call(operator.pow, b.call(operator.sub, 1, init2, type=F64_1D), 2, type=F64_1D)
    b.ret(b.call(np.sum, b.call(operator.add, left, right, type=F64_1D), type=FLOAT))
    g = compiled(f)
    text = source(g)
    expected = "return np_sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)"
    assert f"        {expected}  # opt.py:4-5\n" in text  # the lines of all the folded calls
    assert text.count("\n") == 4  # def, return, return of the factory: nothing named
    xv = np.random.default_rng(0).standard_normal(50)
    assert g(xv) == np.sum(100 * (xv[1:] - xv[:-1] ** 2) ** 2 + (1 - xv[:-1]) ** 2)


def _unary(callee: object, inner: object) -> t.Callable[[Builder, Value, Value, Value], Value]:
    return lambda b, x, y, z: b.call(callee, b.call(inner, x, y))


def _shape(
    outer: object, inner: object, side: int
) -> t.Callable[[Builder, Value, Value, Value], Value]:
    """``outer(inner(x, y), z)`` (side 0) or ``outer(x, inner(y, z))`` (side 1)."""
    if side == 0:
        return lambda b, x, y, z: b.call(outer, b.call(inner, x, y), z)
    return lambda b, x, y, z: b.call(outer, x, b.call(inner, y, z))


def _of_unary(
    outer: object, inner: object, side: int
) -> t.Callable[[Builder, Value, Value, Value], Value]:
    """``outer(inner(x), y)`` (side 0) or ``outer(x, inner(y))`` (side 1)."""
    if side == 0:
        return lambda b, x, y, z: b.call(outer, b.call(inner, x), y)
    return lambda b, x, y, z: b.call(outer, x, b.call(inner, y))


@pytest.mark.parametrize(
    "build, text, args",
    [
        (_unary(operator.neg, operator.pow), "-(x ** y)", (2, 2, 0)),
        (_of_unary(operator.pow, operator.neg, 0), "(-x) ** y", (2, 2, 0)),
        (_shape(operator.pow, operator.pow, 0), "(x ** y) ** z", (2, 3, 2)),
        (_shape(operator.pow, operator.pow, 1), "x ** y ** z", (2, 3, 2)),
        (_of_unary(operator.pow, operator.neg, 1), "x ** -y", (2.0, 2, 0)),
        (lambda b, x, y, z: b.call(operator.neg, b.call(operator.neg, x)), "-(-x)", (2, 0, 0)),
        (_shape(operator.lt, operator.lt, 0), "(x < y) < z", (3, 2, 1)),
        (_shape(operator.lt, operator.lt, 1), "x < (y < z)", (0, 2, 1)),
        (_shape(operator.eq, operator.is_, 0), "(x is y) == z", (1, 1, False)),
        (_shape(operator.sub, operator.sub, 0), "x - y - z", (1, 2, 3)),
        (_shape(operator.sub, operator.sub, 1), "x - (y - z)", (1, 2, 3)),
        (_shape(operator.mul, operator.add, 0), "(x + y) * z", (1, 2, 3)),
        (_shape(operator.add, operator.mul, 1), "x + y * z", (1, 2, 3)),
        (_shape(operator.truediv, operator.mul, 1), "x / (y * z)", (12, 2, 3)),
        (_shape(operator.and_, operator.or_, 0), "(x | y) & z", (1, 2, 3)),
        (_shape(operator.lshift, operator.add, 1), "x << y + z", (1, 2, 3)),
        (_unary(operator.not_, operator.and_), "not (x & y)", (1, 2, 0)),
        (_unary(operator.not_, operator.lt), "not (x < y)", (1, 2, 0)),
        (_unary(operator.invert, operator.add), "~(x + y)", (1, 2, 0)),
        (_of_unary(operator.add, operator.not_, 0), "(not x) + y", (0, 2, 0)),
    ],
)
def test_folding_parenthesises_by_precedence(
    build: t.Callable[[Builder, Value, Value, Value], Value], text: str, args: tuple[object, ...]
) -> None:
    f, b = func("prec", "x", "y", "z")
    b.ret(build(b, *f.args))
    g = compiled(f)
    assert f"        return {text}\n" in source(g)
    x, y, z = args
    assert g(*args) == eval(text, {"x": x, "y": y, "z": z})


def test_folding_into_subscripts_attributes_calls_and_contains() -> None:
    f, b = func("prim", ("A", Array("float64", 2)), ("B", Array("float64", 2)), "i")
    A, B, i = f.args
    row = b.call(operator.getitem, b.call(operator.matmul, A, B), i)
    tr = b.call(builtins.getattr, b.call(operator.add, A, B), "T")
    total = b.call(b.call(builtins.getattr, tr, "sum"), kwargs={"axis": 0})
    hit = b.call(operator.contains, b.call(operator.sub, A, B), b.call(operator.neg, i))
    b.ret(b.call(pack, row, total, hit))
    g = compiled(f)
    text = source(g)
    assert "_0 = (A @ B)[i]" in text
    assert "_1 = (A + B).T.sum(axis=0)" in text  # a method call: the callee is folded too
    # contains(a, b) is written ``b in a``, which evaluates b first: the IR computes a - b
    # first, so only -i, computed right before the test, is folded.
    assert "_2 = A - B" in text and "-i in _2" in text
    Av, Bv = np.arange(4.0).reshape(2, 2), np.ones((2, 2))
    r = g(Av, Bv, 1)
    assert (r[0] == (Av @ Bv)[1]).all() and (r[1] == (Av + Bv).T.sum(axis=0)).all()
    assert r[2] == (-1 in Av - Bv)


def test_no_folding_across_an_effect() -> None:
    f, b = func("effect", "a", "xs")
    a, xs = f.args
    s = b.call(operator.add, a, 1)
    b.call(print, a)  # its result unused: a statement between s and its use
    old = b.call(operator.getitem, xs, 0)
    b.call(operator.setitem, xs, 0, 5)
    b.ret(b.call(pack, b.call(operator.neg, s), old))
    g = compiled(f)
    text = source(g)
    lines = [ln.strip().split("  #")[0] for ln in text.splitlines()]
    expected = ["_0 = a + 1", "print(a)", "_1 = xs[0]", "xs[0] = 5", "return pack(-_0, _1)"]
    assert lines[2:7] == expected
    xs_v = [1, 2]
    assert g(2, xs_v) == (-3, 1) and xs_v == [5, 2]


def test_folding_keeps_the_order_of_evaluation() -> None:
    # f(c[i], a / b) where the IR divides first: folding the division would move it after
    # the subscript, and an IndexError would win over a ZeroDivisionError.
    f, b = func("order", "a", "b", "c", "i")
    a, bb, c, i = f.args
    q = b.call(operator.truediv, a, bb)
    item = b.call(operator.getitem, c, i)
    b.ret(b.call(pack, item, q))
    g = compiled(f)
    text = source(g)
    assert "_0 = a / b" in text and "return pack(c[i], _0)" in text
    with pytest.raises(ZeroDivisionError):
        g(1, 0, [], 3)
    # In the IR's order both operands fold, even around a call with effects: it runs exactly
    # where it ran, between the two.
    f, b = func("around", "a", "b")
    a, bb = f.args
    s = b.call(operator.add, a, bb)
    shown = b.call(print, a)
    b.ret(b.call(pack, s, shown, b.call(operator.mul, a, bb)))
    assert "return pack(a + b, print(a), a * b)" in source(compiled(f))


def test_a_value_used_twice_keeps_its_variable() -> None:
    f, b = func("twice", "a", "b")
    s = b.call(operator.add, *f.args)
    b.ret(b.call(operator.mul, s, s))
    g = compiled(f)
    assert "_0 = a + b" in source(g) and "return _0 * _0" in source(g)
    assert g(1, 2) == 9


def test_folded_casts_and_statements() -> None:
    f, b = func("stmts", "xs", "i", "v")
    xs, i, v = f.args
    value = b.call(operator.mul, v, 2)  # ``a[k] = v`` evaluates v, then a, then k
    b.call(operator.setitem, xs, b.call(operator.add, i, 1), value)
    b.call(operator.setitem, xs, b.call(operator.sub, i, 1), b.call(operator.mul, v, 3))
    r = b.call(operator.iadd, b.call(t.cast, int, b.call(operator.getitem, xs, 0)), 1)
    b.ret(r)
    g = compiled(f)
    text = source(g)
    assert "xs[i + 1] = v * 2" in text
    assert "_0 = i - 1" in text and "xs[_0] = v * 3" in text  # i - 1 comes first in the IR
    assert "_1 = xs[0]\n" in text  # through the cast, which writes nothing
    xs_v = [1, 0, 0]
    assert g(xs_v, 1, 3) == 10 and xs_v == [9, 0, 6]


# --------------------------------------------------------------------------------------------
# Control flow


def sum_below() -> Function:
    """sum(range(n)) as a while loop with block arguments."""
    f, b = func("sum_below", "n")
    loop, body, done = block(b, "loop", "i", "acc"), block(b, "body"), block(b, "done")
    b.jump(loop, 0, 0)
    b.at_end(loop)
    i, acc = loop.args
    b.branch(b.call(operator.lt, i, f.args[0]), body, [], done, [])
    b.at_end(body)
    acc1 = b.call(operator.add, acc, i, name="acc")
    b.jump(loop, b.call(operator.add, i, 1, name="i"), acc1)
    b.at_end(done)
    b.ret(acc)
    return f


def test_while_loop_sum() -> None:
    g = compiled(sum_below())
    for n in [0, 1, 2, 10, 1000]:
        assert g(n) == sum(range(n))
    assert "while True" in source(g)
    assert "__label" not in source(g)  # one labelled block: nothing to dispatch on


def test_while_loop_factorial() -> None:
    f, b = func("fact", "n")
    loop, done = block(b, "loop", "k", "r"), block(b, "done", "r")
    b.jump(loop, f.args[0], 1)
    b.at_end(loop)
    k, r = loop.args
    r1 = b.call(operator.mul, r, k, name="r")
    k1 = b.call(operator.sub, k, 1, name="k")
    b.branch(b.call(operator.gt, k1, 0), loop, [k1, r1], done, [r1])
    b.at_end(done)
    b.ret(done.args[0])
    g = compiled(f)
    for n in [1, 2, 5, 20, 30]:
        assert g(n) == math.factorial(n)


def test_nested_loops() -> None:
    # total = sum(i * j for i in range(n) for j in range(i))
    f, b = func("nested", "n")
    outer, inner = block(b, "outer", "i", "total"), block(b, "inner", "j", "t")
    inner_body, outer_next, done = block(b, "inner_body"), block(b, "outer_next"), block(b, "done")
    b.jump(outer, 0, 0)
    b.at_end(outer)
    i, total = outer.args
    b.branch(b.call(operator.lt, i, f.args[0]), inner, [0, total], done, [])
    b.at_end(inner)
    j, tt = inner.args
    b.branch(b.call(operator.lt, j, i), inner_body, [], outer_next, [])
    b.at_end(inner_body)
    t1 = b.call(operator.add, tt, b.call(operator.mul, i, j))
    b.jump(inner, b.call(operator.add, j, 1), t1)
    b.at_end(outer_next)
    b.jump(outer, b.call(operator.add, i, 1), tt)
    b.at_end(done)
    b.ret(total)
    g = compiled(f)
    for n in [0, 1, 3, 17]:
        assert g(n) == sum(i * j for i in range(n) for j in range(i))
    assert source(g).count("while True") == 1


def test_diamond_is_if_else() -> None:
    f, b = func("absdiff", "a", "c")
    a, c = f.args
    then, other, join = block(b, "then"), block(b, "else"), block(b, "join", "d")
    b.branch(b.call(operator.gt, a, c), then, [], other, [])
    b.at_end(then)
    b.jump(join, b.call(operator.sub, a, c))
    b.at_end(other)
    b.jump(join, b.call(operator.sub, c, a))
    b.at_end(join)
    b.ret(b.call(operator.mul, join.args[0], 10))
    g = compiled(f)
    for av, cv in [(5, 3), (3, 5), (4, 4)]:
        assert g(av, cv) == abs(av - cv) * 10
    text = source(g)
    assert "if a > c:" in text and "else:" in text
    assert "while True" not in text  # the join follows the if/else in sequence


def diamond(b: Builder, cond: Value, x: Value, then_add: object, else_add: object) -> Value:
    """``x + then_add if cond else x + else_add``, as a diamond; leaves b in the join."""
    then, other, join = block(b, "then"), block(b, "else"), block(b, "join", "d")
    b.branch(cond, then, [], other, [])
    b.at_end(then)
    b.jump(join, b.call(operator.add, x, then_add))
    b.at_end(other)
    b.jump(join, b.call(operator.add, x, else_add))
    b.at_end(join)
    return join.args[0]


def test_diamonds_in_sequence_then_a_loop() -> None:
    f, b = func("seq", "n")
    n = f.args[0]
    x = diamond(b, b.call(operator.gt, n, 5), n, 100, 200)
    x = diamond(b, b.call(operator.gt, x, 150), x, 1, 2)
    loop, body, done = block(b, "loop", "i", "acc"), block(b, "body"), block(b, "done")
    b.jump(loop, 0, x)
    b.at_end(loop)
    i, acc = loop.args
    b.branch(b.call(operator.lt, i, n), body, [], done, [])
    b.at_end(body)
    y = diamond(b, b.call(operator.mod, i, 2), acc, i, b.call(operator.neg, i))
    b.jump(loop, b.call(operator.add, i, 1), y)
    b.at_end(done)
    b.ret(acc)
    g = compiled(f)

    def reference(n: int) -> int:
        x = n + 100 if n > 5 else n + 200
        x = x + 1 if x > 150 else x + 2
        for i in range(n):
            x = x + i if i % 2 else x + -i
        return x

    assert [g(n) for n in range(12)] == [reference(n) for n in range(12)]
    text = source(g)
    before_loop = text.split("while True")[0]
    assert before_loop.count("if ") == 2
    # Only the loop header is labelled (so no label variable); the join in the loop follows
    # its if/else there too.
    assert "__label" not in text
    labels = [ln.strip() for ln in text.splitlines() if "# ^" in ln]
    assert labels == ["# ^join", "# ^join.1", "# ^loop", "# ^join.2"]


def test_join_reached_from_a_loop_is_labelled() -> None:
    # ``done`` is reached from the entry (n <= 0) and from the loop: it cannot simply follow.
    f, b = func("early", "n")
    loop, done = block(b, "loop", "i", "acc"), block(b, "done", "r")
    b.branch(b.call(operator.gt, f.args[0], 0), loop, [0, 0], done, [-1])
    b.at_end(loop)
    i, acc = loop.args
    acc1 = b.call(operator.add, acc, i)
    i1 = b.call(operator.add, i, 1)
    b.branch(b.call(operator.lt, i1, f.args[0]), loop, [i1, acc1], done, [acc1])
    b.at_end(done)
    b.ret(done.args[0])
    g = compiled(f)
    assert [g(n) for n in range(-1, 6)] == [-1, -1] + [sum(range(n)) for n in range(1, 6)]


def test_diamond_with_returns_needs_no_loop() -> None:
    f, b = func("sign", "x")
    pos, rest, neg, zero = block(b, "pos"), block(b, "rest"), block(b, "neg"), block(b, "zero")
    b.branch(b.call(operator.gt, f.args[0], 0), pos, [], rest, [])
    b.at_end(pos)
    b.ret(1)
    b.at_end(rest)
    b.branch(b.call(operator.lt, f.args[0], 0), neg, [], zero, [])
    b.at_end(neg)
    b.ret(-1)
    b.at_end(zero)
    b.ret(0)
    g = compiled(f)
    assert [g(v) for v in (5, -2, 0)] == [1, -1, 0]
    assert "while True" not in source(g)


def test_block_argument_swap() -> None:
    # a, b = b, a + b, n times: Fibonacci through simultaneous block arguments
    f, b = func("fib", "n")
    loop, done = block(b, "loop", "k", "a", "b"), block(b, "done")
    b.jump(loop, 0, 0, 1)
    b.at_end(loop)
    k, x, y = loop.args
    step = block(b, "step")
    b.branch(b.call(operator.lt, k, f.args[0]), step, [], done, [])
    b.at_end(step)
    s = b.call(operator.add, x, y, name="s")
    b.jump(loop, b.call(operator.add, k, 1), y, s)
    b.at_end(done)
    b.ret(x)
    g = compiled(f)

    def fib(n: int) -> int:
        a, c = 0, 1
        for _ in range(n):
            a, c = c, a + c
        return a

    assert [g(n) for n in range(15)] == [fib(n) for n in range(15)]


def test_pure_swap_of_block_arguments() -> None:
    # Each turn passes (b, a) to (a, b): a sequential copy would lose one of them.
    f, b = func("swap", "n", "a", "b")
    loop, body, done = block(b, "loop", "k", "a", "b"), block(b, "body"), block(b, "done")
    b.jump(loop, 0, f.args[1], f.args[2])
    b.at_end(loop)
    k, x, y = loop.args
    b.branch(b.call(operator.lt, k, f.args[0]), body, [], done, [])
    b.at_end(body)
    b.jump(loop, b.call(operator.add, k, 1), y, x)
    b.at_end(done)
    b.ret(b.call(pack, x, y))
    g = compiled(f)
    assert g(0, "p", "q") == ("p", "q")
    assert g(1, "p", "q") == ("q", "p")
    assert g(5, "p", "q") == ("q", "p")
    assert "k, a_1, b_1 = k + 1, b_1, a_1" in source(g)


def test_branch_with_both_arms_to_one_block() -> None:
    f, b = func("pick", "c", "x", "y")
    join = block(b, "join", "v")
    b.branch(f.args[0], join, [f.args[1]], join, [f.args[2]])
    b.at_end(join)
    b.ret(join.args[0])
    g = compiled(f)
    assert g(True, 1, 2) == 1 and g(False, 1, 2) == 2 and g([], 1, 2) == 2


def test_irreducible_control_flow() -> None:
    # A cycle with two entries (a <-> b, entered at either): no structured loop fits it, the
    # dispatch loop does.
    f, b = func("irreducible", "x")
    ba, bb, done = block(b, "a", "i"), block(b, "b", "j"), block(b, "done", "r")
    b.branch(b.call(operator.gt, f.args[0], 0), ba, [f.args[0]], bb, [0])
    b.at_end(ba)
    i1 = b.call(operator.add, ba.args[0], 1)
    b.branch(b.call(operator.lt, i1, 20), bb, [i1], done, [i1])
    b.at_end(bb)
    j1 = b.call(operator.mul, bb.args[0], 2)
    b.branch(b.call(operator.lt, j1, 20), ba, [j1], done, [j1])
    b.at_end(done)
    b.ret(done.args[0])
    g = compiled(f)

    def reference(x: int) -> int:
        v, at_a = (x, True) if x > 0 else (0, False)
        while True:
            v = v + 1 if at_a else v * 2
            if not v < 20:
                return v
            at_a = not at_a

    assert [g(x) for x in range(-2, 25)] == [reference(x) for x in range(-2, 25)]


def test_constant_condition_and_constant_return() -> None:
    f, b = func("const_branch", "x")
    yes, no = block(b, "yes"), block(b, "no")
    b.branch(True, yes, [], no, [])
    b.at_end(yes)
    b.ret(None)
    b.at_end(no)
    b.ret(f.args[0])
    g = compiled(f)
    assert g(1) is None
    assert "if True:" in source(g) or "if not True:" in source(g)


def many_blocks(n_states: int) -> Function:
    """A state machine over ``n_states`` blocks, each with two or more predecessors."""
    f, b = func("machine", "n")
    states = [block(b, f"s{k}", "step", "acc") for k in range(n_states)]
    done = block(b, "done", "acc")
    b.jump(states[0], 0, 1)
    for k, st in enumerate(states):
        b.at_end(st)
        step, acc = st.args
        acc2 = b.call(operator.mod, b.call(operator.add, b.call(operator.mul, acc, 31), k), 1000003)
        step2 = b.call(operator.add, step, 1)
        more = block(b, f"more{k}")
        b.branch(b.call(operator.lt, step2, f.args[0]), more, [], done, [acc2])
        b.at_end(more)
        even = b.call(operator.eq, b.call(operator.mod, acc2, 2), 0)
        b.branch(
            even,
            states[(k + 1) % n_states],
            [step2, acc2],
            states[(3 * k + 1) % n_states],
            [step2, acc2],
        )
    b.at_end(done)
    b.ret(done.args[0])
    return f


def machine_reference(n: int, n_states: int) -> int:
    k, step, acc = 0, 0, 1
    while True:
        acc = (acc * 31 + k) % 1000003
        step += 1
        if not step < n:
            return acc
        k = (k + 1) % n_states if acc % 2 == 0 else (3 * k + 1) % n_states


@pytest.mark.parametrize("n_states", [2, 3, 5, 40])
def test_many_blocks_dispatch_tree(n_states: int) -> None:
    g = compiled(many_blocks(n_states))
    for n in [1, 2, 7, 100, 2000]:
        assert g(n) == machine_reference(n, n_states)
    text = source(g)
    n_labels = len(plan(many_blocks(n_states)).labels)
    assert n_labels >= min(n_states, 30)  # a few states are inline or follow another
    # A balanced tree: each labelled block sits under about log2(n_labels) tests.
    assert text.count("if __label <") == n_labels - 1
    depth = max(len(line) - len(line.lstrip()) for line in text.splitlines()) // 4
    assert depth <= 5 + math.ceil(math.log2(n_states + 1)) + 2


def test_unreachable_blocks_are_skipped() -> None:
    f, b = func("skip", "x")
    dead, dead2, live = block(b, "dead", "z"), block(b, "dead2"), block(b, "live")
    b.jump(live)
    b.at_end(dead)
    b.ret(b.call(operator.truediv, dead.args[0], 0, name="boom"))
    b.at_end(dead2)
    b.jump(live)  # an edge from dead code does not make ``live`` a join
    b.at_end(live)
    b.ret(b.call(operator.add, f.args[0], 1))
    g = compiled(f)
    assert g(1) == 2
    assert "boom" not in source(g) and "while True" not in source(g)


def test_long_guard_chain_stays_shallow() -> None:
    # 300 sequential "if bad: raise" checks would exceed Python's 100 indentation levels
    # if each continuation nested inside the previous check.
    f, b = func("guards", "x")
    for k in range(300):
        fail, ok = block(b, f"fail{k}"), block(b, f"ok{k}")
        b.branch(b.call(operator.eq, f.args[0], k), fail, [], ok, [])
        b.at_end(fail)
        b.raise_(b.call(ValueError, k))
        b.at_end(ok)
    b.ret(b.call(operator.neg, f.args[0]))
    g = compiled(f)
    assert g(1000) == -1000
    with pytest.raises(ValueError, match="^17$"):
        g(17)
    depth = max(len(line) - len(line.lstrip()) for line in source(g).splitlines()) // 4
    assert depth <= 4


def test_long_elif_chain_before_a_loop() -> None:
    # Many arms jumping to one join before any loop: written as if/elif, not nested else/if.
    f, b = func("choose", "x")
    join = block(b, "join", "y")
    for k in range(150):
        hit, miss = block(b, f"hit{k}"), block(b, f"miss{k}")
        b.branch(b.call(operator.eq, f.args[0], k), hit, [], miss, [])
        b.at_end(hit)
        b.jump(join, k * 10)
        b.at_end(miss)
    b.jump(join, -1)
    b.at_end(join)
    b.ret(join.args[0])
    g = compiled(f)
    assert [g(0), g(7), g(149), g(500)] == [0, 70, 1490, -1]
    depth = max(len(line) - len(line.lstrip()) for line in source(g).splitlines()) // 4
    assert depth <= 4


def interpret(f: Function, *args: object) -> object:
    """The IR's meaning, one operation at a time: the reference for random control flow."""
    env: dict[Value, object] = dict(zip(f.args, args))

    def val(v: Value) -> object:
        return v.value if isinstance(v, Constant) else env[v]

    b = f.entry
    while True:
        for op in b.ops:
            if isinstance(op, Call):
                fn = t.cast(t.Callable[..., object], val(op.callee))
                kwargs = {k: val(v) for k, v in op.kwargs.items()}
                env[op.result] = fn(*map(val, op.args), **kwargs)
            elif isinstance(op, Return):
                return val(op.value)
            elif isinstance(op, Jump):
                target, passed = op.target, op.args
            elif isinstance(op, Branch):
                taken = bool(val(op.cond))
                target = op.if_true if taken else op.if_false
                passed = op.true_args if taken else op.false_args
            else:
                raise AssertionError(op)
        values = [val(v) for v in passed]  # all read before any is written
        env.update(zip(target.args, values))
        b = target


def random_function(seed: int) -> Function:
    """A random state machine: every state updates (fuel, a, b), stops when out of fuel, and
    then jumps, branches or returns at random; arguments are passed in shuffled orders."""
    rng = random.Random(seed)
    n = rng.randint(1, 12)
    f, b = func(f"random{seed}", "a", "b", "fuel")
    states = [block(b, f"s{k}", "fuel", "a", "b") for k in range(n)]
    done = block(b, "done", "r") if rng.random() < 0.7 else None

    def finish(value: Value) -> None:
        if done is not None:
            b.jump(done, value)
        else:
            b.ret(value)

    b.branch(
        b.call(operator.gt, f.args[0], f.args[1]),
        rng.choice(states), [f.args[2], f.args[0], f.args[1]],
        rng.choice(states), [f.args[2], f.args[1], f.args[0]],
    )
    for k, st in enumerate(states):
        b.at_end(st)
        fuel, a, c = st.args
        a3 = b.call(operator.add, b.call(operator.mul, a, 3), b.call(operator.add, c, k))
        a2 = b.call(operator.mod, a3, 97)
        c2 = b.call(operator.mod, b.call(operator.add, c, a), 89)
        fuel2 = b.call(operator.sub, fuel, 1)
        live, out = block(b, f"live{k}"), block(b, f"out{k}")
        b.branch(b.call(operator.gt, fuel2, 0), live, [], out, [])
        b.at_end(out)
        finish(b.call(operator.add, b.call(operator.mul, a2, 1000), c2))
        b.at_end(live)
        shuffled = [(fuel2, a2, c2), (fuel2, c2, a2), (fuel2, c, a), (fuel2, a2, a)]
        kind = rng.choice(["jump", "branch", "branch", "return"])
        if kind == "jump":
            b.jump(rng.choice(states), *rng.choice(shuffled))
        elif kind == "branch":
            cond = b.call(operator.eq, b.call(operator.mod, b.call(operator.add, a2, c2), 3), 0)
            arms = [rng.choice(states) for _ in range(2)]
            b.branch(cond, arms[0], rng.choice(shuffled), arms[1], rng.choice(shuffled))
        else:
            finish(b.call(operator.neg, a2))
    if done is not None:
        b.at_end(done)
        b.ret(b.call(operator.add, done.args[0], 1))
    return f


@pytest.mark.parametrize("seed", range(300))
def test_random_control_flow_agrees_with_the_ir(seed: int) -> None:
    f = random_function(seed)
    g = compiled(f)
    for args in [(1, 2, 5), (7, 3, 40), (50, 60, 200), (0, 0, 1)]:
        assert g(*args) == interpret(f, *args), (args, source(g))


# --------------------------------------------------------------------------------------------
# Mutation, items and attributes


def test_iadd_mutates_an_array_in_place() -> None:
    f, b = func("acc", "a", "d")
    r = b.call(operator.iadd, f.args[0], f.args[1], name="r")
    b.ret(r)
    g = compiled(f)
    a = np.zeros(3)
    out = g(a, np.ones(3))
    assert out is a
    np.testing.assert_array_equal(a, np.ones(3))
    assert "r = a" in source(g) and "r += d" in source(g)


def test_iadd_on_floats_and_tuples_rebinds_only() -> None:
    f, b = func("acc", "a", "d")
    r = b.call(operator.iadd, f.args[0], f.args[1], name="r")
    b.ret(b.call(pack, f.args[0], r))
    g = compiled(f)
    assert g(1.5, 2.0) == (1.5, 3.5)
    assert g((1,), (2,)) == ((1,), (1, 2))
    lst: list[int] = [1]
    assert g(lst, [2]) == ([1, 2], [1, 2])  # lists, like arrays, extend in place


def test_all_in_place_operators() -> None:
    ops = [
        (operator.isub, operator.sub),
        (operator.imul, operator.mul),
        (operator.itruediv, operator.truediv),
        (operator.ifloordiv, operator.floordiv),
        (operator.imod, operator.mod),
        (operator.ipow, operator.pow),
        (operator.ilshift, operator.lshift),
        (operator.irshift, operator.rshift),
        (operator.iand, operator.and_),
        (operator.ior, operator.or_),
        (operator.ixor, operator.xor),
    ]
    for inplace, plain in ops:
        f, b = func("ip", "a", "d")
        b.ret(b.call(inplace, f.args[0], f.args[1]))
        assert compiled(f)(13, 3) == plain(13, 3), inplace
    f, b = func("imatmul", "a", "d")
    b.ret(b.call(operator.imatmul, f.args[0], f.args[1]))
    m = np.eye(2) * 2
    want = m @ m
    np.testing.assert_array_equal(compiled(f)(m, m), want)


def test_getitem_and_setitem_with_slices_and_tuples() -> None:
    f, b = func("items", "a", "n")
    a, n = f.args
    head = b.call(operator.getitem, a, slice(1, None), name="head")
    col = b.call(operator.getitem, a, (slice(None), 0), name="col")
    rev = b.call(operator.getitem, a, (slice(None, None, -1), Ellipsis), name="rev")
    dyn = b.call(slice, 0, n, name="dyn")
    part = b.call(operator.getitem, a, dyn, name="part")
    b.call(operator.setitem, a, (0, slice(0, 2)), -1.0)
    b.call(operator.setitem, a, (-1, -1), b.call(operator.getitem, col, 1))
    one = b.call(operator.getitem, a, (1,), name="one")
    b.ret(b.call(pack, head, col, rev, part, one))
    g = compiled(f)

    def reference(a: np.ndarray[t.Any, t.Any], n: int) -> tuple[object, ...]:
        head, col, rev, part = a[1:], a[:, 0], a[::-1, ...], a[0:n]
        a[0, 0:2] = -1.0
        a[-1, -1] = col[1]
        return head, col, rev, part, a[1,]

    got, want = np.arange(12.0).reshape(3, 4), np.arange(12.0).reshape(3, 4)
    for x, y in zip(g(got, 2), reference(want, 2)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(got, want)
    text = source(g)
    assert "a[1:]" in text and "a[:, 0]" in text and "a[::-1, ...]" in text
    assert "a[0, 0:2] = -1.0" in text and "a[1,]" in text


def test_setitem_and_delitem_on_dicts_and_the_none_result() -> None:
    f, b = func("d", "d", "k")
    r = b.call(operator.setitem, f.args[0], f.args[1], 1)
    b.call(operator.delitem, f.args[0], "gone")
    s = b.call(operator.getitem, f.args[0], f.args[1])
    b.ret(b.call(pack, r, s))
    d = {"gone": 0}
    assert compiled(f)(d, "new") == (None, 1)
    assert d == {"new": 1}


def test_getattr_setattr_delattr() -> None:
    class Box:
        pass

    f, b = func("attrs", "o", "v")
    o, v = f.args
    b.call(setattr, o, "value", v)
    got = b.call(getattr, o, "value", name="got")
    dflt = b.call(getattr, o, "missing", 7, name="dflt")  # three arguments: stays a call
    b.call(setattr, o, "tmp", 1)
    b.call(delattr, o, "tmp")
    real = b.call(getattr, 5, "real", name="real")  # a constant receiver: never ``5.real``
    b.ret(b.call(pack, got, dflt, real))
    g = compiled(f)
    box = Box()
    assert g(box, 3.5) == (3.5, 7, 5)
    assert getattr(box, "value") == 3.5 and not hasattr(box, "tmp")
    text = source(g)
    assert "o.value = v" in text and "got = o.value" in text and "del o.tmp" in text


def test_getattr_with_unusual_names_stays_a_call() -> None:
    class Box:
        pass

    box = Box()
    setattr(box, "not an identifier", 1)
    setattr(box, "ﬁ", 2)  # NFKC would turn o.ﬁ into o.fi
    setattr(box, "fi", 3)
    f, b = func("odd", "o")
    vals = [b.call(getattr, f.args[0], name) for name in ("not an identifier", "ﬁ", "fi")]
    b.ret(b.call(pack, *vals))
    assert compiled(f)(box) == (1, 2, 3)


def test_constant_receivers_and_callees() -> None:
    # ``(10, 20, 30)[i]`` is fine Python, but ``1[0]`` and ``1()`` draw SyntaxWarnings and
    # ``5.real`` does not parse: constants in receiver positions are closure variables.
    f, b = func("consts", "i")
    item = b.call(operator.getitem, (10, 20, 30), f.args[0])
    letter = b.call(operator.getitem, "abc", f.args[0])
    b.ret(b.call(pack, item, letter))
    assert compiled(f)(2) == (30, "c")

    f, b = func("not_callable", "i")
    b.ret(b.call(1, f.args[0]))
    g = compiled(f)
    with pytest.raises(TypeError, match="not callable"):
        g(0)

    f, b = func("not_subscriptable", "i")
    b.ret(b.call(operator.getitem, 1, f.args[0]))
    with pytest.raises(TypeError, match="not subscriptable"):
        compiled(f)(0)


def test_raise_propagates() -> None:
    f, b = func("fail", "msg")
    b.loc = Location("model.py", 42)
    b.raise_(b.call(KeyError, f.args[0]))
    g = compiled(f)
    with pytest.raises(KeyError, match="nope"):
        g("nope")

    f, b = func("reraise", "exc")
    b.raise_(f.args[0])
    err = ZeroDivisionError("passed in")
    with pytest.raises(ZeroDivisionError) as info:
        compiled(f)(err)
    assert info.value is err


def test_traceback_shows_generated_line() -> None:
    f, b = func("fail", "x")
    b.loc = Location("model.py", 42)
    err = b.call(ValueError, f.args[0], name="err")
    b.raise_(err, loc=Location("model.py", 43))
    g = compiled(f)
    with pytest.raises(ValueError) as info:
        g("bad")
    frames = [fr for fr in traceback.extract_tb(info.value.__traceback__)]
    generated = [fr for fr in frames if fr.filename.startswith("<gibbous:fail")]
    assert len(generated) == 1
    # The call making the exception is folded into the raise, and the line keeps its location.
    assert generated[0].line == "raise ValueError(x)  # model.py:42"
    assert linecache.getline(generated[0].filename, generated[0].lineno or 0).strip() == (
        "raise ValueError(x)  # model.py:42"
    )


def test_filenames_are_unique_per_compilation() -> None:
    g1, g2 = compiled(sum_below()), compiled(sum_below())
    c1 = t.cast(t.Any, g1).__code__.co_filename
    c2 = t.cast(t.Any, g2).__code__.co_filename
    assert c1 != c2 and c1.startswith("<gibbous:sum_below")


# --------------------------------------------------------------------------------------------
# Names and constants


def test_name_hint_collisions() -> None:
    f, b = func("c0", "x", "x", "x.1", "lambda", "c0", "__label", "None", "_0", "", "sum")
    vals = list(f.args)
    arr = np.array([1.0, 2.0])
    r = b.call(operator.add, vals[0], arr, name="x")
    r = b.call(operator.add, r, vals[1], name="x.1")
    r = b.call(operator.add, r, vals[2], name="x_1")
    for v in vals[3:]:
        r = b.call(operator.add, r, v)
    r2 = b.call(operator.add, r, b.call(np.sum, arr), name="np_sum")
    b.ret(r2)
    g = compiled(f)
    args = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    np.testing.assert_array_equal(g(*args), arr + sum(args) + 3.0)
    tree = ast.parse(source(g))
    inner = t.cast(ast.FunctionDef, t.cast(ast.FunctionDef, tree.body[0]).body[0])
    params = [a.arg for a in inner.args.posonlyargs]
    assert len(set(params)) == len(params) == 10
    assert params[:4] == ["x", "x_1", "x_1_1", "lambda_1"]
    closure = [a.arg for a in t.cast(ast.FunctionDef, tree.body[0]).args.args]
    assert not set(params) & set(closure)
    assert not set(params + closure) & RESERVED


def test_nfkc_equivalent_hints_stay_distinct() -> None:
    f, b = func("nfkc", "ﬁ", "fi")
    b.ret(b.call(operator.sub, f.args[0], f.args[1]))
    assert compiled(f)(10, 3) == 7


def test_array_constants_are_bound_not_inlined() -> None:
    arr = np.array([1.0, 2.0, 3.0])
    f, b = func("const", "x")
    y = b.call(operator.mul, f.args[0], arr, name="y")
    b.ret(b.call(pack, y, arr))
    g = compiled(f)
    y_v, same = g(2.0)
    np.testing.assert_array_equal(y_v, 2.0 * arr)
    assert same is arr  # the very object, not a copy
    text = source(g)
    assert "def __make(" in text and "array" not in text.split("\n", 1)[1]


def test_non_finite_and_special_float_constants() -> None:
    f, b = func("special", "x")
    vals = [
        b.call(operator.add, f.args[0], math.inf),
        b.call(operator.add, f.args[0], -math.inf),
        b.call(operator.add, f.args[0], math.nan),
        b.call(operator.mul, f.args[0], -0.0),
        b.call(operator.add, f.args[0], 0.1),
        b.call(operator.add, f.args[0], 1e300),
        b.call(operator.add, f.args[0], 10**100),
        b.call(operator.add, f.args[0], np.float32(1.5)),
    ]
    b.ret(b.call(pack, *vals))
    g = compiled(f)
    inf, ninf, nan, nzero, tenth, big, googol, f32 = g(1.0)
    assert inf == math.inf and ninf == -math.inf and math.isnan(nan)
    assert nzero == 0.0 and math.copysign(1.0, nzero) == -1.0
    assert tenth == 1.1 and big == 1e300 and googol == 1.0 + 10**100
    assert type(f32) is type(1.0 + np.float32(1.5))  # the constant kept its type
    text = source(g)
    assert "x + inf" in text and "x + neg_inf" in text and "x + nan" in text
    assert "x * (-0.0)" in text


def test_literals_are_exact() -> None:
    for value in [0, -5, 2**200, 1.5, -0.0, 1e-310, "a'\"\n\u2028", b"\x00b", None, True, ...]:
        text = literal(value)
        assert text is not None
        back = eval(text)
        assert type(back) is type(value) and (back == value or back is value)
    assert literal((1, (2.5, "x"), ())) == "(1, (2.5, 'x'), ())"
    assert literal(math.nan) is None and literal(np.float64(1.0)) is None
    assert literal(2**300) is None and literal(True.__class__) is None


def test_identity_against_constants_uses_the_bound_object() -> None:
    big = 10**20
    f, b = func("ident", "x")
    b.ret(b.call(operator.is_, f.args[0], big))
    g = compiled(f)
    assert g(big) is True
    assert g(int(str(big))) is False  # equal but not the same object


def test_callable_constants_bound_by_readable_names() -> None:
    f, b = func("calls", "x")
    b.ret(b.call(operator.add, b.call(np.sin, f.args[0]), b.call(len, "abc")))
    g = compiled(f)
    assert g(0.0) == 3.0
    header = source(g).splitlines()[0]
    assert header == "def __make(sin, len):"


# --------------------------------------------------------------------------------------------
# The compiled function


def test_repeated_calls_give_the_same_answers() -> None:
    g = compiled(many_blocks(7))
    want = [machine_reference(n, 7) for n in range(50)]
    for _ in range(200):
        assert [g(n) for n in range(50)] == want


def test_source_and_ir_are_exposed() -> None:
    f = sum_below()
    g = compiled(f)
    assert getattr(g, "__gibbous_ir__") is f
    assert source(g).startswith("def __make(")
    assert t.cast(t.Any, g).__name__ == "sum_below"


def test_invalid_ir_is_refused() -> None:
    f, b = func("bad", "x")
    other = block(b, "other")
    b.jump(other)  # ``other`` has no terminator
    with pytest.raises(VerificationError):
        compile_function(f)


def test_factory_shares_closure_variables_between_functions() -> None:
    buf: list[float] = []

    f, b = func("push", "x")
    b.call(buf.append, f.args[0])
    b.ret(None)
    g_, b2 = func("pop")
    b2.ret(b2.call(buf.pop))
    factory = Factory("pushpop")
    factory.add(f)
    factory.add(g_)
    push, pop = factory.build()
    push(1.0)
    push(2.0)
    assert pop() == 2.0 and buf == [1.0]
    assert getattr(push, "__gibbous_source__") is getattr(pop, "__gibbous_source__")
    assert source(push).count("def __make(") == 1


def test_factory_bind_names_a_closure_variable() -> None:
    factory = Factory("bound")
    state = {"calls": 0}
    assert factory.bind(state, "state") == "state"
    assert factory.bind(state, "other") == "state"  # one variable per object
    f, b = func("state")  # a function named like the variable must not shadow it
    b.ret(b.call(operator.getitem, state, "calls"))
    factory.add(f)
    (g,) = factory.build()
    assert g() == 0
    assert "return state[" in source(g) and "def state_1(" in source(g)


def test_values_named_like_builtins_do_not_shadow_them() -> None:
    f, b = func("shadow", "len")
    r = b.call(len, f.args[0], name="len")
    b.ret(b.call(operator.add, r, b.call(len, "ab", name="sum")))
    g = compiled(f)
    assert g([1, 2, 3]) == 5
    make = t.cast(ast.FunctionDef, ast.parse(source(g)).body[0])
    inner = t.cast(ast.FunctionDef, make.body[0])
    names = [n for n in ast.walk(inner) if isinstance(n, ast.Name)]
    stored = {n.id for n in names if isinstance(n.ctx, ast.Store)}
    params = {a.arg for a in inner.args.posonlyargs}
    assert not (stored | params) & set(vars(builtins))
    # The one builtin name in the source: a closure variable holding that very builtin.
    assert [a.arg for a in make.args.args] == ["len"]
