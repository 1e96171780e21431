"""Forward mode through writes into arrays: item assignment, in-place operators, ``out=``,
``np.copyto`` / ``fill``, callees writing into their arguments, the stateful ``matmul(out=)``
and a user's stateful forward rule; each jvp against central finite differences."""

from __future__ import annotations

import threading
import tracemalloc
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError, build_frule, jvp
from gibbous.rules.inplace_forward import fresh

RNG = np.random.default_rng(1515)


def _copies(args: t.Sequence[t.Any]) -> list[t.Any]:
    return [np.array(a) if isinstance(a, np.ndarray) else a for a in args]


def check(f: t.Callable[..., t.Any], *args: t.Any) -> None:
    """jvp of ``f`` against central differences of ``f`` along random tangents, twice (the
    second call warm); the caller's arguments and tangents are left alone by the check."""
    rule = build_frule(f, *_copies(args))
    for _ in range(2):
        tangents = [
            RNG.standard_normal(a.shape) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
            else float(RNG.standard_normal()) if isinstance(a, float)
            else None
            for a in args
        ]  # fmt: skip
        kept = _copies(tangents)
        y, dy = jvp(rule, f, _copies(args), tangents)
        for d, k in zip(tangents, kept):  # (jvp writes into copies of written tangents)
            assert d is None or np.array_equal(d, k)
        h = 1e-6

        def at(s: float) -> t.Any:
            moved = [
                a if d is None else a + s * d for a, d in zip(_copies(args), tangents)
            ]
            return np.asarray(f(*moved), dtype=float)

        fd = (at(h) - at(-h)) / (2 * h)
        np.testing.assert_allclose(y, f(*_copies(args)))
        np.testing.assert_allclose(dy, fd, rtol=1e-6, atol=1e-8)


# -- item assignment ------------------------------------------------------------------------


def assigns_through_a_view(x: np.ndarray) -> t.Any:
    z = np.zeros(4)
    v = z.reshape(2, 2)  # a view made before the writes sees them
    z[0] = x[1] * x[2]
    z[1:3] = np.sin(x[:2])
    v[1, 1] = x[3]
    return np.sum(v * v)


def fills_in_a_loop(x: np.ndarray) -> t.Any:
    out = np.empty(x.shape)
    for i in range(x.shape[0]):
        out[i] = np.exp(x[i]) * x[i - 1]
    return out


def assigns_by_mask_and_index(x: np.ndarray) -> t.Any:
    z = x.copy()
    z[z > 0.5] = 0.0
    z[np.array([0, 2])] = x[1:3] ** 2
    return z


def shifts_overlapping(x: np.ndarray) -> t.Any:
    z = x * 1.0
    z[1:] = z[:-1]  # overlapping source and target
    return z * x


def assigns_a_constant(x: np.ndarray) -> t.Any:
    z = x * x
    z[0] = 3.0  # (the tangent there becomes 0)
    return z


# -- in-place operators ---------------------------------------------------------------------


def operators_in_place(x: np.ndarray) -> t.Any:
    y = x * 2.0
    y += x
    y *= np.sin(x)
    y -= 1.0
    y /= 1.0 + x * x
    y **= 2
    return y


def squares_itself(x: np.ndarray) -> t.Any:
    y = x + 1.0
    y *= y  # an operand aliasing the target
    return y


def adds_into_its_argument(a: np.ndarray) -> t.Any:
    b = a[:2]
    b += a[2:4]  # writes into a's memory through a view
    return np.sum(a * a)


def writes_into_its_argument(x: np.ndarray) -> t.Any:
    x[0] = 3.0
    x *= x
    return x.sum()


def copies_before_writing(x: np.ndarray) -> t.Any:
    z = x + 0.0  # (a rule may give d(x + 0) = dx itself: the write must not reach dx)
    z[0] = 1.0
    return z * x


# -- out=, copyto, fill ---------------------------------------------------------------------


def writes_out(x: np.ndarray) -> t.Any:
    z = np.empty_like(x)
    np.sin(x, out=z)
    np.multiply(z, x, out=z)  # out= one of the operands
    w = np.empty(())
    np.sum(z, out=w)
    return z * w


def copies_and_fills(x: np.ndarray) -> t.Any:
    z = np.empty(x.shape)
    z.fill(x[0])
    np.copyto(z[1:], x[1:] ** 2)
    np.copyto(z, 0.5, where=x > 0.7)
    return z * x


def multiplies_out(x: np.ndarray) -> t.Any:
    a = x.reshape(2, 3)
    c = np.empty((2, 2))
    np.matmul(a, a.T, out=c)
    d = np.empty((2, 3))
    np.dot(c, a, out=d)
    return d


def multiplies_into_an_operand(x: np.ndarray) -> t.Any:
    a = x[:4].reshape(2, 2) + 0.0
    np.matmul(a, a, out=a)  # C is A and B: the tangent is computed before the write
    return a


# -- callees --------------------------------------------------------------------------------


def fill_with_tanh(out: np.ndarray, x: np.ndarray) -> None:
    out[:] = np.tanh(x)


def writes_into_a_listed_array(x: np.ndarray) -> t.Any:
    arrays = [np.zeros(x.shape), np.zeros(x.shape)]
    arrays[0][:] = x  # (the list holds the array; its tangent list, the array's tangent)
    return arrays[0] * x + arrays[1]


def grows_a_list(x: np.ndarray) -> t.Any:
    ys = [x]
    y = x
    for _ in range(3):
        y = y * 0.5 + np.sin(y)
        ys.append(y)
    ys.insert(1, x * x)
    ys.extend([np.cos(x), 2.0 * x])
    last = ys.pop()
    ys[0] = last + ys[0]
    ts = [0.0, 1.0]
    ts.append(float(x[0]))  # (a list of floats beside one of arrays)
    return np.stack(ys).sum(axis=0) * sum(ts) + np.array(ys)[2]


def calls_a_writer(x: np.ndarray) -> t.Any:
    out = np.zeros(x.shape)
    fill_with_tanh(out, x)
    return out * x


def accumulate(acc: np.ndarray, x: np.ndarray, n: int) -> None:
    if n == 0:
        return
    acc += x * n
    accumulate(acc, x, n - 1)


def calls_a_recursive_writer(x: np.ndarray) -> t.Any:
    acc = np.zeros(x.shape)
    accumulate(acc, np.cos(x), 3)
    return acc


CASES = [
    assigns_through_a_view,
    fills_in_a_loop,
    assigns_by_mask_and_index,
    shifts_overlapping,
    assigns_a_constant,
    operators_in_place,
    squares_itself,
    adds_into_its_argument,
    writes_into_its_argument,
    copies_before_writing,
    writes_out,
    copies_and_fills,
    multiplies_out,
    multiplies_into_an_operand,
    calls_a_writer,
    calls_a_recursive_writer,
    writes_into_a_listed_array,
    grows_a_list,
]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp_through_writes(f: t.Callable[..., t.Any]) -> None:
    check(f, np.linspace(0.1, 0.9, 6))


def test_the_primal_writes_as_the_function_does() -> None:
    x = np.linspace(0.1, 0.9, 6)
    rule = build_frule(writes_into_its_argument, x.copy())
    mine, dx = x.copy(), np.ones(6)
    jvp(rule, writes_into_its_argument, (mine,), (dx,))
    expected = x.copy()
    writes_into_its_argument(expected)
    assert np.array_equal(mine, expected)
    assert np.array_equal(dx, np.ones(6))  # (the caller's tangent is not written)


def writes_first(x: np.ndarray, y: np.ndarray) -> t.Any:
    x[0] = 0.0
    return np.sum(x * y)


def test_a_written_argument_sharing_memory_is_refused() -> None:
    x = np.linspace(0.1, 0.9, 6)
    rule = build_frule(writes_first, x.copy(), x.copy())
    with pytest.raises(ValueError, match="shares memory with argument 1"):
        jvp(rule, writes_first, (x, x[::-1]), (np.ones(6), np.ones(6)))


# -- refusals -------------------------------------------------------------------------------

BUFFER = np.zeros(6)


def writes_a_global(x: np.ndarray) -> t.Any:
    BUFFER[:] = x
    return BUFFER * x


class Box:
    def __init__(self) -> None:
        self.a = np.zeros(6)


def writes_into_an_objects_array(x: np.ndarray) -> t.Any:
    box = Box()
    box.a[:] = x  # (an object's attribute: its tangent kept in the object's)
    return box.a * x


def test_a_write_into_an_objects_array_is_followed() -> None:
    x, dx = np.linspace(0.5, 1.5, 6), np.linspace(-1.0, 1.0, 6)
    rule = build_frule(writes_into_an_objects_array, x)
    y, dy = jvp(rule, writes_into_an_objects_array, (x,), (dx,))
    np.testing.assert_allclose(y, x * x)
    np.testing.assert_allclose(dy, 2 * x * dx)


def make_writer(varied_out: bool) -> t.Callable[[np.ndarray], t.Any]:
    fill = fill_with_tanh

    def through_a_cell(x: np.ndarray) -> t.Any:
        out = np.zeros(x.shape)  # (no tangent: the callee's write is not seen here)
        fill(out, x)  # a callee known only at run time, writing into its argument
        return out * x

    def with_a_tangent(x: np.ndarray) -> t.Any:
        out = x * 0.0
        fill(out, x)
        return out * x

    return with_a_tangent if varied_out else through_a_cell


@pytest.mark.parametrize(
    ("f", "words"),
    [
        (writes_a_global, "write into an array the function reads from outside"),
    ],
)
def test_writes_forward_mode_cannot_follow_are_refused(
    f: t.Callable[..., t.Any], words: str
) -> None:
    with pytest.raises(ForwardModeError, match=words) as info:
        build_frule(f, np.ones(6))
    assert "test_writes.py:" in str(info.value)


@pytest.mark.parametrize(
    ("varied_out", "words"),
    [(False, "argument 'out', which has no tangent"), (True, "writes into its argument 0")],
)
def test_a_run_time_callee_writing_into_its_argument_is_refused(
    varied_out: bool, words: str
) -> None:
    f = make_writer(varied_out)
    rule = build_frule(f, np.ones(6))
    with pytest.raises(ForwardModeError, match=words) as info:
        jvp(rule, f, (np.ones(6),), (np.ones(6),))
    assert "fill_with_tanh" in str(info.value)


def test_fresh_refuses_a_view_whose_tangent_is_a_copy() -> None:
    x, dx = np.ones(6), np.ones(6)
    with pytest.raises(ForwardModeError, match="not the same view"):
        fresh(x[1:], dx[1:].copy(), x, dx)
    dz = fresh(x * 2.0, dx, x, dx)  # new memory whose tangent is the operand's: copied
    assert dz is not dx and np.array_equal(dz, dx)
    assert fresh(x[1:], dx[1:], x, dx).base is dx


# -- the stateful matmul(out=) and a user's stateful rule ----------------------------------


def product_into(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> t.Any:
    np.matmul(a, b, out=c)
    return c


def test_matmul_out_allocates_nothing_warm() -> None:
    a, b, c = RNG.standard_normal((32, 32)), RNG.standard_normal((32, 32)), np.zeros((32, 32))
    rule = build_frule(product_into, a, b, c)
    da, db, dc = np.ones((32, 32)), np.ones((32, 32)), np.zeros((32, 32))
    rule.run(a, b, c, da, db, dc)  # (the program itself: jvp copies written tangents)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(3):
            rule.run(a, b, c, da, db, dc)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename") if s.size_diff > 0)
    assert grown < 32 * 32 * 8  # (a fresh A @ dB would be 8 KiB per call)
    np.testing.assert_allclose(dc, np.ones((32, 32)) @ b + a @ np.ones((32, 32)))
    check(product_into, a[:3, :4], b[:4, :2], c[:3, :2].copy())


def test_matmul_out_keeps_one_buffer_per_thread() -> None:
    a, b = RNG.standard_normal((8, 8)), RNG.standard_normal((8, 8))
    rule = build_frule(product_into, a, b, np.zeros((8, 8)))
    errors: list[float] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(200):
            da, db = rng.standard_normal((8, 8)), rng.standard_normal((8, 8))
            _, dy = jvp(rule, product_into, (a, b, np.zeros((8, 8))), (da, db, np.zeros((8, 8))))
            errors.append(float(np.max(np.abs(dy - (da @ b + a @ db)))))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(errors) == 800 and max(errors) < 1e-12


def scale_into(out: np.ndarray, x: np.ndarray, s: float) -> None:
    np.multiply(x, s, out=out)


@gibbous.frule(scale_into, writes=(0,))
def scale_into_forward(
    state: t.Any, out: t.Any, x: t.Any, s: t.Any, dout: t.Any, dx: t.Any, ds: t.Any
) -> tuple[None, None, t.Any]:
    if state is None or state.shape != x.shape:
        state = np.empty(x.shape)  # (a buffer kept for the next call at this site)
    np.multiply(x, s, out=out)
    if dx is None:
        dout.fill(0.0)
    else:
        np.multiply(dx, s, out=dout)
    if ds is not None:
        np.multiply(x, ds, out=state)
        dout += state
    return None, None, state


def calls_scale_into(x: np.ndarray, s: float) -> t.Any:
    out = np.zeros(x.shape)
    scale_into(out, x, s)
    return out * x


def test_a_stateful_user_rule() -> None:
    check(calls_scale_into, np.linspace(0.1, 0.9, 6), 1.7)


# -- second order through writes ------------------------------------------------------------


def energy_with_writes(x: np.ndarray) -> t.Any:
    z = np.zeros(x.shape)
    z[1:] = x[1:] - x[:-1] ** 2
    z *= z
    z += (1.0 - x) ** 2
    return np.sum(z)


def test_hvp_through_writes() -> None:
    x, v = np.linspace(0.1, 0.9, 5), RNG.standard_normal(5)
    hv = gibbous.hvp(energy_with_writes, x, v)
    h = 1e-5
    rule = gibbous.build_rrule(energy_with_writes, x)

    def grad(p: np.ndarray) -> t.Any:
        return gibbous.value_and_gradient(rule, energy_with_writes, p)[1][1]

    fd = (grad(x + h * v) - grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8)


# -- writes that allocate nothing warm ------------------------------------------------------


def sin_into(x: np.ndarray, z: np.ndarray) -> t.Any:
    np.sin(x, out=z)
    return z


def hypot_into(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> t.Any:
    np.hypot(x, y, out=z)
    return z


def scales_in_place(z: np.ndarray, y: np.ndarray) -> t.Any:
    z *= y
    z /= 2.0
    return z


def sums_into_out(x: np.ndarray, z: np.ndarray) -> t.Any:
    np.sum(x, axis=0, out=z)
    return z


@pytest.mark.parametrize(
    ("f", "shapes"),
    [
        (sin_into, [(64,), (64,)]),
        (hypot_into, [(64,), (64,), (64,)]),
        (scales_in_place, [(8, 8), (8,)]),
        (sums_into_out, [(8, 8), (8,)]),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_writes_allocate_nothing_warm(f: t.Callable[..., t.Any], shapes: list[t.Any]) -> None:
    """The primal allocates nothing, so neither does its forward program (the program
    itself: ``jvp`` copies the tangents of written arguments)."""
    from gibbous.testing.allocations import measure

    args = [RNG.uniform(0.5, 1.5, s) for s in shapes]
    rule = build_frule(f, *args)
    tangents = [RNG.standard_normal(s) for s in shapes]
    assert measure(lambda mark: f(*args)).allocated == 0
    used = measure(lambda mark: rule.run(*args, *tangents))
    assert used.allocated == 0, used
    check(f, *[RNG.uniform(0.5, 1.5, s) for s in shapes])


def rows_into_a_list(x: np.ndarray) -> t.Any:
    z = np.zeros(x.shape)
    try:
        z[1:] = x[1:] - x[:-1] ** 2
    except ValueError:
        pass
    ys = []
    for row in z:  # (rows of an array written into: views, their tangents the same views)
        ys.append(row * row)
    return np.sum(np.array(ys)) + np.max(x)


def test_hvp_through_writes_try_lists_and_max() -> None:
    x, v = np.linspace(0.1, 0.9, 5), RNG.standard_normal(5)
    hv = gibbous.hvp(rows_into_a_list, x, v)
    rule = gibbous.build_rrule(rows_into_a_list, x)

    def grad(p: np.ndarray) -> t.Any:
        return gibbous.value_and_gradient(rule, rows_into_a_list, p)[1][1]

    h = 1e-5
    np.testing.assert_allclose(hv, (grad(x + h * v) - grad(x - h * v)) / (2 * h), atol=1e-7)
    check(rows_into_a_list, x)


def grows_its_list(ys: list[np.ndarray], x: np.ndarray) -> t.Any:
    ys.append(np.sin(x) * ys[0])
    ys[0][:] = x * x  # (an array the caller's list holds, written)
    return np.sum(np.stack(ys) * x)


def test_a_list_argument_written_into() -> None:
    """The function appends to its list argument and writes into an array in it: the primal
    list changes as the function makes it, the caller's tangent list and its arrays do not,
    and the tangent agrees with differences."""
    y0, x = RNG.standard_normal(4), RNG.standard_normal(4)
    dy0, dx = RNG.standard_normal(4), RNG.standard_normal(4)
    rule = build_frule(grows_its_list, [y0.copy()], x)
    mine, tangent = [y0.copy()], [dy0.copy()]
    value, d = jvp(rule, grows_its_list, (mine, x), (tangent, dx))
    expected = [y0.copy()]
    assert value == grows_its_list(expected, x)
    assert len(mine) == 2 and all(np.array_equal(a, b) for a, b in zip(mine, expected))
    assert len(tangent) == 1 and np.array_equal(tangent[0], dy0)
    h = 1e-6
    fd = (
        grows_its_list([y0 + h * dy0], x + h * dx) - grows_its_list([y0 - h * dy0], x - h * dx)
    ) / (2 * h)
    np.testing.assert_allclose(d, fd, rtol=1e-6, atol=1e-8)
    shared = y0.copy()
    with pytest.raises(ValueError, match="writes into argument 0, which shares memory"):
        jvp(rule, grows_its_list, ([shared], shared), ([dy0], dx))


def scales_its_argument(x: np.ndarray) -> t.Any:
    x *= 2.0
    x[0] = x[1] ** 2
    return np.sum(x**3)


def test_hvp_of_a_function_writing_into_its_argument() -> None:
    """Reverse mode over the forward program restores what it wrote: ``x`` and ``v`` are the
    caller's afterwards, and ``H v`` agrees with differences of gradients."""
    x, v = np.array([0.5, 0.7, 0.9]), RNG.standard_normal(3)
    x0, v0 = x.copy(), v.copy()
    hv = gibbous.hvp(scales_its_argument, x, v)
    assert np.array_equal(x, x0) and np.array_equal(v, v0)

    def grad(p: np.ndarray) -> t.Any:
        rule = gibbous.build_rrule(scales_its_argument, p.copy())
        return gibbous.value_and_gradient(rule, scales_its_argument, p.copy())[1][1]

    h = 1e-5
    np.testing.assert_allclose(hv, (grad(x0 + h * v0) - grad(x0 - h * v0)) / (2 * h), rtol=1e-6)


def _writes_into_values_of_unknown_type() -> t.Callable[[np.ndarray], t.Any]:
    """``y -= ...`` into an array and ``s -= ...`` of a number, each the result of a callee the
    build cannot tell (``fn``, a value), the array seen again through another name."""
    fn, first = np.sin, np.cos

    def f(x: np.ndarray) -> t.Any:
        y = fn(x)
        alias = y
        y -= x**2  # (a write: ``alias`` sees it)
        y *= x
        s = first(x[0])
        s -= x[1] ** 3  # (a new number)
        return np.sum(alias**2) * s

    return f


def test_hvp_of_in_place_operators_on_values_of_unknown_type() -> None:
    """The tangent of ``y op z`` written out, then the write, then that tangent written into
    the array's, which every name of it holds; a number's replaced.  Against differences of
    gradients, and the gradient against forward mode."""
    f = _writes_into_values_of_unknown_type()
    x, v = np.array([0.5, 0.7, 0.9]), RNG.standard_normal(3)
    grad = gibbous.grad(f)
    h = 1e-5
    hv = gibbous.hvp(f, x, v)
    np.testing.assert_allclose(hv, (grad(x + h * v) - grad(x - h * v)) / (2 * h), rtol=1e-6)
    _, d = jvp(build_frule(f, x), f, (x,), (v,))
    assert d == pytest.approx(float(np.dot(grad(x), v)), rel=1e-10)


def doubles_its_argument(x: np.ndarray) -> t.Any:
    x *= 2.0
    return np.sin(x) * x[::-1]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_jacobian_of_a_function_writing_into_its_argument(mode: str) -> None:
    """Every column is taken at ``x`` (the function runs on copies), which stays the caller's."""
    x = np.array([0.5, 0.7, 0.9])
    x0 = x.copy()
    jac = gibbous.jacobian(doubles_its_argument, x, mode=mode)
    assert np.array_equal(x, x0)
    h = 1e-6
    fd = np.stack(
        [
            (doubles_its_argument(x0 + h * e) - doubles_its_argument(x0 - h * e)) / (2 * h)
            for e in np.eye(3)
        ],
        axis=1,
    )
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)
    hess = gibbous.hessian(scales_its_argument, x)
    assert np.array_equal(x, x0) and hess.shape == (3, 3)
