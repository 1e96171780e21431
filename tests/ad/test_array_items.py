"""The ``array-items`` pass under AD: ``x, y, z = a`` of a 1-D float64 array read item by item
(``a[k]``, an inline form), and ``np.array([a, b, c])`` of floats as ``float_array`` (an array
form).  Gradients are checked against central differences and against the same programs built
without the pass or with the called rule; values, classes and errors against plain Python."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.inspect import code_ir, rule_table
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.library.arrays.float_arrays import INLINE_ITEMS
from gibbous.rules.registry import Context, DefaultContext, lookup_rule, primitive

Array = np.ndarray[t.Any, t.Any]

WITHOUT_PASS = ("fold", "dce", "cse", "simplify-cfg")  # the standard pipeline before it
SIGMA, RHO, BETA, SCALE = 10.0, 28.0, 8.0 / 3.0, 0.5

rng = np.random.default_rng(5)


def central(f: t.Callable[..., t.Any], args: list[t.Any], k: int, h: float = 1e-6) -> t.Any:
    """The derivative of ``f`` by argument ``k`` (a float or a float64 array)."""
    x = args[k]

    def at(v: t.Any) -> float:
        return float(f(*fresh(args[:k]), v, *fresh(args[k + 1 :])))

    if not isinstance(x, np.ndarray):
        return (at(x + h) - at(x - h)) / (2 * h)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        out[i] = (at(up) - at(down)) / (2 * h)
    return out


def fresh(args: t.Sequence[t.Any]) -> list[t.Any]:
    """Copies of the array arguments: a function may write into its argument."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def gradient(f: t.Callable[..., t.Any], *args: t.Any, **options: t.Any) -> tuple[t.Any, t.Any]:
    rule = gibbous.build_rrule(f, *fresh(args), **options)
    for _ in range(2):  # a warm second call: stacks and fdata reused
        y, g = gibbous.value_and_gradient(rule, f, *fresh(args))
    return y, g


def checked(f: t.Callable[..., t.Any], *args: t.Any) -> tuple[t.Any, t.Any]:
    """The value and gradient of ``f``: the value as Python computes it, the gradient as central
    differences and as the program built without the pass give it."""
    y, g = gradient(f, *args)
    expected = f(*fresh(args))
    assert y == expected and type(y) is type(expected)
    _, reference = gradient(f, *args, passes=WITHOUT_PASS)
    for k in range(len(args)):
        np.testing.assert_allclose(g[1 + k], central(f, list(args), k), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(g[1 + k], reference[1 + k], rtol=1e-13, atol=1e-15)
    return y, g


def kinds(f: t.Callable[..., t.Any], *args: t.Any) -> dict[str, set[str]]:
    """The rule kinds of the call sites of ``f``, by callee."""
    found: dict[str, set[str]] = {}
    for row in rule_table(f, *args):
        found.setdefault(row.callee, set()).add(row.kind)
    return found


def line_of(f: t.Callable[..., t.Any], text: str) -> int:
    lines, start = __import__("inspect").getsourcelines(f)
    return start + next(i for i, line in enumerate(lines) if text in line)


# --------------------------------------------------------------------------------------------
# A Lorenz-like loop: both rewrites, every iteration


def lorenz(xyz: Array, dt: float) -> t.Any:
    for _ in range(30):
        x, y, z = xyz
        xyz = xyz + np.array([SIGMA * (y - x), x * (RHO - z) - y, x * y - BETA * z]) * dt
    return np.sum(xyz * xyz)


def test_lorenz_gradient_by_finite_differences() -> None:
    y, _ = checked(lorenz, np.array([1.0, 1.5, 2.0]), 0.01)
    assert type(y) is np.float64


def test_lorenz_uses_the_forms() -> None:
    found = kinds(lorenz, np.ones(3), 0.01)
    assert "gibbous.ir.runtime.unpack" not in found
    assert "gibbous.ir.runtime.make_list" not in found and "numpy.array" not in found
    assert found["gibbous.ir.runtime.float_array"] == {"inline"}
    assert found["operator.getitem"] == {"inline"}
    assert "check_unpack" in str(code_ir(lorenz, np.ones(3), 0.01, stage="optimized"))
    for row in rule_table(lorenz, np.ones(3), 0.01):
        assert row.kind in ("inline", "inactive"), row


# --------------------------------------------------------------------------------------------
# Unpacking


def unpack1(a: Array) -> t.Any:
    (x,) = a
    return np.sin(x) * x


def unpack2(a: Array) -> t.Any:
    x, y = a
    return x * np.exp(y) - y


def unpack3(a: Array) -> t.Any:
    x, y, z = a
    return x * y / z + np.cos(x)


def unpack4(a: Array) -> t.Any:
    w, x, y, z = a
    return w * x - y * z * w + z


UNPACKS = [unpack1, unpack2, unpack3, unpack4]


@pytest.mark.parametrize("f", UNPACKS, ids=lambda f: f.__name__)
def test_unpacked_items_by_finite_differences(f: t.Callable[[Array], t.Any]) -> None:
    n = UNPACKS.index(f) + 1
    a = rng.uniform(0.5, 1.5, n)
    checked(f, a)
    assert kinds(f, a)["operator.getitem"] == {"inline"}
    assert "gibbous.ir.runtime.unpack" not in kinds(f, a)


def last_item(a: Array) -> t.Any:
    x, y, z = a
    return z


def test_items_are_numpy_scalars() -> None:
    a = np.array([0.5, 1.5, 2.5])
    y, g = gradient(last_item, a)
    assert y == 2.5 and type(y) is np.float64 is type(last_item(a))
    np.testing.assert_array_equal(g[1], [0.0, 0.0, 1.0])


def unpack_and_use(a: Array) -> t.Any:
    x, y, z = a
    return x * y * z


@pytest.mark.parametrize("n", [0, 1, 2, 4, 7])
def test_a_wrong_length_raises_as_python(n: int) -> None:
    rule = gibbous.build_rrule(unpack_and_use, np.ones(3))
    with pytest.raises(ValueError) as python:
        unpack_and_use(np.ones(n))
    with pytest.raises(ValueError) as ours:
        gibbous.value_and_gradient(rule, unpack_and_use, np.ones(n))
    assert str(ours.value) == str(python.value)
    where = f"{__file__}:{line_of(unpack_and_use, 'x, y, z = a')}"
    assert any(where in note for note in getattr(ours.value, "__notes__", ())), ours.value


def unused_items(a: Array) -> t.Any:
    x, _, _ = a
    return np.sum(a)


def test_an_unused_unpack_still_checks_the_length() -> None:
    rule = gibbous.build_rrule(unused_items, np.ones(3))
    _, g = gibbous.value_and_gradient(rule, unused_items, np.ones(3))
    np.testing.assert_array_equal(g[1], np.ones(3))
    with pytest.raises(ValueError, match=r"too many values to unpack \(expected 3\)"):
        gibbous.value_and_gradient(rule, unused_items, np.ones(4))


def written_after(a: Array) -> t.Any:
    x, y = a
    a[0] = 5.0  # the items were read before: x keeps the old value
    return x * y + a[0] * y


def test_items_are_read_where_unpacked() -> None:
    checked(written_after, np.array([1.5, 2.5]))


def rows(m: Array) -> t.Any:
    top, bottom = m  # rows: views, read as m[0] and m[1]
    return np.sum(top * np.sin(bottom))


def written_rows(m: Array) -> t.Any:
    top, bottom = m
    top *= bottom  # into m, through the view
    return np.sum(m * m)


def planes(c: Array) -> t.Any:
    front, back = c  # of a 3-D array: 2-D views
    return np.sum(front @ back.T)


@pytest.mark.parametrize("f", [rows, written_rows, planes], ids=lambda f: f.__name__)
def test_a_matrix_unpacks_into_rows(f: t.Callable[[Array], t.Any]) -> None:
    m = rng.uniform(0.5, 1.5, (2, 3) if f is not planes else (2, 3, 3))
    checked(f, m)
    found = kinds(f, m)
    row = "inline" if m.ndim == 2 else "primitive"  # a matrix's row: the real_matrix_row form
    assert "gibbous.ir.runtime.unpack" not in found and found["operator.getitem"] == {row}


def negative_and_repeated(a: Array) -> t.Any:
    t3 = runtime.unpack(a, 3)
    return t3[-1] * t3[0] + t3[2] * t3[-3]


def test_negative_and_repeated_indices() -> None:
    a = rng.uniform(0.5, 1.5, 3)
    checked(negative_and_repeated, a)
    assert "gibbous.ir.runtime.unpack" not in kinds(negative_and_repeated, a)


def in_try(a: Array) -> t.Any:
    try:
        x, y = a
    except ValueError:
        return np.sum(a)
    return x * y


def test_an_unpack_in_a_try_block() -> None:
    for n in (2, 3):
        checked(in_try, rng.uniform(0.5, 1.5, n))


# --------------------------------------------------------------------------------------------
# np.array([...]) of floats

OFFSET = 0.25  # a global: a constant item


def mixed(a: Array, s: float) -> t.Any:
    x, y = a
    inactive = float(len(a))  # computed from no argument's value: inactive
    v = np.array([x, 2.0, s * y, inactive, OFFSET, x * x, y, s])
    return np.sum(np.sin(v) * np.arange(1.0, 9.0))


def plain_floats(s: float, u: float) -> t.Any:
    return np.sum(np.array([s, u * s, 1.5]) ** 2)


def test_items_of_every_kind_by_finite_differences() -> None:
    a, s = rng.uniform(0.5, 1.5, 2), 0.75
    assert kinds(mixed, a, s)["gibbous.ir.runtime.float_array"] == {"inline"}
    checked(mixed, a, s)


def test_python_float_arguments() -> None:
    checked(plain_floats, 0.5, 1.25)


def called() -> Context:
    """A context in which ``float_array`` is called as its rule at every arity: no form."""
    ctx = Context("called", parent=DefaultContext)
    for n in range(1, INLINE_ITEMS + 1):
        registration = lookup_rule(DefaultContext, runtime.float_array, [T.FLOAT] * n)
        assert registration.variant == "float_items" and registration.inline is not None
        primitive(runtime.float_array, *registration.pattern.args, ctx=ctx)(registration.rule)
    return ctx


def wide(s: float, u: float) -> t.Any:  # more items than a form takes: the general rule
    return np.sum(np.array([s, u, s * u, s, 1.0, u, u * u, s + u, s - u]) ** 3)


@pytest.mark.parametrize("f", [mixed, plain_floats, lorenz, wide], ids=lambda f: f.__name__)
def test_the_form_agrees_with_the_called_rule(f: t.Callable[..., t.Any]) -> None:
    args = {
        mixed: [rng.uniform(0.5, 1.5, 2), 0.75],
        plain_floats: [0.5, 1.25],
        lorenz: [np.array([1.0, 1.5, 2.0]), 0.01],
        wide: [0.5, 1.25],
    }[f]
    y1, g1 = gradient(f, *args)
    y2, g2 = gradient(f, *args, ctx=called())
    assert y1 == y2
    for k in range(len(args)):
        np.testing.assert_allclose(g1[1 + k], g2[1 + k], rtol=1e-14)
        np.testing.assert_allclose(g1[1 + k], central(f, args, k), rtol=1e-6)
    expected = "primitive" if f is wide else "inline"
    assert kinds(f, *args)["gibbous.ir.runtime.float_array"] == {expected}


def list_kept(s: float) -> t.Any:
    items = [s, 2.0 * s]
    v = np.array(items)
    items.append(s * s)  # the list is used again: not rewritten
    return np.sum(v) + sum(items)


def with_dtype(s: float) -> t.Any:
    return np.sum(np.array([s, 2.0 * s], dtype=np.float64) ** 2)


def of_ints(s: float) -> t.Any:
    return np.sum(np.array([s, 2]) * s)


@pytest.mark.parametrize("f", [list_kept, with_dtype, of_ints], ids=lambda f: f.__name__)
def test_other_literals_are_left_alone(f: t.Callable[[float], t.Any]) -> None:
    assert "gibbous.ir.runtime.float_array" not in kinds(f, 0.75)
    checked(f, 0.75)


# --------------------------------------------------------------------------------------------
# Nested uses


def rotate(v: Array) -> Array:
    x, y = v
    return np.array([x * SCALE - y, y * SCALE + x])


def nested(a: Array) -> t.Any:
    v = rotate(a)  # a derived child returns a form's result
    p, q = rotate(v)  # unpacked again, in the caller
    u, w = np.array([p * q, q])  # a form's result unpacked at once
    return u * w + np.sum(v)


def test_nested_uses() -> None:
    a = rng.uniform(0.5, 1.5, 2)
    checked(nested, a)
    assert kinds(rotate, a)["gibbous.ir.runtime.float_array"] == {"inline"}
