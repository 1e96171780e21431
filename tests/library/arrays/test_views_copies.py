"""Views, copies, joins, constructors and attributes of arrays."""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np
import pytest

from gibbous.tangents.model import NoTangent, Tangent
from tests.library.harness import Tape, call, check, check_call, check_like_float64, gradient

NT = NoTangent()


def views(x: np.ndarray) -> list[tuple[str, t.Callable[..., t.Any]]]:
    return [
        ("reshape", call(np.reshape, (4, 3))),
        ("reshape method", call(np.ndarray.reshape, 4, 3)),
        ("reshape method tuple", call(np.ndarray.reshape, (2, 6))),
        ("reshape -1", call(np.reshape, -1)),
        ("ravel", call(np.ravel)),
        ("ravel method", call(np.ndarray.ravel)),
        ("transpose", call(np.transpose)),
        ("transpose axes", call(np.transpose, (1, 0))),
        ("transpose method", call(np.ndarray.transpose, 1, 0)),
        ("swapaxes", call(np.swapaxes, 0, 1)),
        ("expand_dims", call(np.expand_dims, 1)),
        ("squeeze", lambda tape, x: tape.call(np.squeeze, tape.call(np.expand_dims, x, 0))),
        ("T", lambda tape, x: tape.call(builtins.getattr, x, tape.const("T"))),
    ]


@pytest.mark.parametrize("index", range(13))
def test_views_share_fdata(index: int, rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4))
    label, program = views(x)[index]
    check(program, x, rng=rng)
    tape = Tape()
    (v,) = tape.inputs(x)
    y = program(tape, v)
    assert np.shares_memory(y.fdata, v.fdata), label
    y.fdata[...] += 1.0  # a cotangent written into the view lands in x's fdata
    assert v.fdata.sum() == x.size


@pytest.mark.parametrize("fn", [np.reshape, np.ravel, np.ndarray.flatten])
def test_copying_reshapes(fn: t.Any, rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4))
    def program(tape: t.Any, x: t.Any) -> t.Any:
        transposed = tape.call(np.transpose, x)  # not contiguous: flattening it copies
        return tape.call(fn, transposed, -1) if fn is np.reshape else tape.call(fn, transposed)

    check(program, x, rng=rng)
    tape = Tape()
    (v,) = tape.inputs(x)
    y = program(tape, v)
    assert not np.shares_memory(y.fdata, v.fdata)
    check(call(fn, order="F") if fn is not np.reshape else call(fn, -1, order="F"), x, rng=rng)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_copy_and_astype(dtype: t.Any, rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3))
    check_call(np.copy, x, rng=rng)
    check_call(np.ndarray.copy, x, rng=rng)
    loose: dict[str, t.Any] = {"steps": (1e-2, 1e-3), "rtol": 1e-3} if dtype is np.float32 else {}
    out = check(call(np.ndarray.astype, dtype), x, rng=rng, **loose)
    assert out.grads[0].dtype == np.float64
    check_like_float64(call(np.ndarray.astype, np.float64), x.astype(np.float32))


def test_astype_to_the_same_dtype_without_copy_is_the_array() -> None:
    x = np.ones(3)
    tape = Tape()
    (v,) = tape.inputs(x)
    assert tape.call(np.ndarray.astype, v, np.float64, copy=False).codual is v.codual
    assert gradient(call(np.ndarray.astype, np.int64), x)[0].sum() == 0


def test_array_of_nested_lists_and_tuples(rng: np.random.Generator) -> None:
    check_call(np.array, [1.5, -0.5, 2.0], rng=rng)
    check_call(np.array, [(1.5, -0.5), (2.0, 0.25)], rng=rng)
    check_call(np.array, ([1.5, -0.5], [2.0, 0.25]), rng=rng)
    check_call(np.asarray, [rng.standard_normal(3), rng.standard_normal(3)], rng=rng)
    check_call(np.array, 1.5, rng=rng)
    check(call(np.array, dtype=np.float32), [1.5, 2.5], rng=rng, rtol=1e-3, steps=(1e-2,))
    out = check_call(np.array, (1.5, 2, 3.0), rng=rng)
    assert out.rdata[0][1] is NT


def test_array_of_an_array_copies_and_asarray_returns_it(rng: np.random.Generator) -> None:
    x = rng.standard_normal(3)
    check_call(np.array, x, rng=rng)
    tape = Tape()
    (v,) = tape.inputs(x)
    assert tape.call(np.asarray, v).codual is v.codual
    y = tape.call(np.array, v)
    assert not np.shares_memory(y.fdata, v.fdata)


def test_array_from_scalars_made_in_the_program(rng: np.random.Generator) -> None:
    def program(tape: t.Any, a: t.Any, b: t.Any) -> t.Any:
        from gibbous.ir import runtime

        row = tape.call(runtime.make_list, a, tape.call(operator.mul, a, b), tape.const(1.0))
        return tape.call(np.array, tape.call(runtime.make_list, row, row))

    check(program, 1.5, -0.5, rng=rng)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concatenate(axis: t.Any, rng: np.random.Generator) -> None:
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    from gibbous.ir import runtime

    def of_tuple(tape: t.Any, a: t.Any, b: t.Any) -> t.Any:
        return tape.call(np.concatenate, tape.call(runtime.make_tuple, a, b), axis=axis)

    def of_list(tape: t.Any, a: t.Any, b: t.Any) -> t.Any:
        return tape.call(np.concatenate, tape.call(runtime.make_list, a, b), axis)

    check(of_tuple, a, b, rng=rng)
    check(of_list, a, b, rng=rng)


def test_concatenate_uneven_and_lists(rng: np.random.Generator) -> None:
    from gibbous.ir import runtime

    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 5))
    def side_by_side(tape: t.Any, a: t.Any, b: t.Any) -> t.Any:
        return tape.call(np.concatenate, tape.call(runtime.make_tuple, a, b), axis=1)

    def with_a_list(tape: t.Any, a: t.Any, x: t.Any) -> t.Any:
        items = tape.call(runtime.make_list, x, 2.0)
        return tape.call(np.concatenate, tape.call(runtime.make_tuple, a, items))

    check(side_by_side, a, b, rng=rng)
    check(with_a_list, rng.standard_normal(3), 0.5, rng=rng)
    check_call(np.concatenate, (rng.standard_normal(2), rng.standard_normal(3)), rng=rng)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack(axis: int, rng: np.random.Generator) -> None:
    from gibbous.ir import runtime

    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    def stacked(tape: t.Any, a: t.Any, b: t.Any) -> t.Any:
        return tape.call(np.stack, tape.call(runtime.make_list, a, b), axis=axis)

    check(stacked, a, b, rng=rng)


def test_stack_of_scalars_and_hstack_vstack(rng: np.random.Generator) -> None:
    from gibbous.ir import runtime

    check(lambda tape, a, b: tape.call(np.stack, tape.call(runtime.make_tuple, a, b)), 1.5, -0.5,
          rng=rng)  # fmt: skip
    for fn in (np.hstack, np.vstack):
        check_call(fn, (rng.standard_normal(3), rng.standard_normal(3)), rng=rng)
        check_call(fn, [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))], rng=rng)


@pytest.mark.parametrize("fn, args", [(np.zeros, ((2, 3),)), (np.ones, (3,)), (np.empty, (2,)),
                                      (np.eye, (3,)), (np.identity, (2,))])  # fmt: skip
def test_constructors_get_zero_fdata(fn: t.Any, args: t.Any) -> None:
    tape = Tape()
    y = tape.call(fn, *args)
    assert isinstance(y.fdata, np.ndarray) and not np.any(y.fdata) and y.fdata is not y.primal


def test_zeros_like_and_ones_like(rng: np.random.Generator) -> None:
    x = rng.standard_normal(3)
    for fn in (np.zeros_like, np.ones_like, np.empty_like):
        (g,) = gradient(call(fn), x, seed=1.0)
        assert not np.any(g)


def test_full_linspace_arange_differentiate_their_values(rng: np.random.Generator) -> None:
    check(lambda tape, v: tape.call(np.full, (2, 3), v), 1.5, rng=rng)
    check(lambda tape, v: tape.call(np.full, (2, 3), v), rng.standard_normal(3), rng=rng)
    check(lambda tape, a, v: tape.call(np.full_like, a, v), rng.standard_normal(3), 0.5, rng=rng)
    check(lambda tape, a, b: tape.call(np.linspace, a, b, 5), 0.5, 2.0, rng=rng)
    check(lambda tape, a, b: tape.call(np.linspace, a, b, num=4, endpoint=False), 0.5, 2.0, rng=rng)
    check(lambda tape, a, s: tape.call(np.arange, a, 3.0, s), 0.25, 0.5, rng=rng)
    assert gradient(call(np.arange), 5) == [NT]


def test_attributes(rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3))
    tape = Tape()
    (v,) = tape.inputs(x)
    for name, value in [("shape", (2, 3)), ("ndim", 2), ("size", 6), ("dtype", x.dtype)]:
        y = tape.call(builtins.getattr, v, tape.const(name))
        assert y.primal == value and y.fdata is NT
    m = tape.call(builtins.getattr, v, tape.const("sum"))  # a bound method: x's fdata
    assert isinstance(m.fdata, Tangent) and m.fdata.fields["__self__"] is v.fdata
    tape.backward()
    z = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    for name in ("real", "imag", "T"):
        check(lambda tape, z: tape.call(builtins.getattr, z, tape.const(name)), z, rng=rng)
    for name in ("real", "imag"):
        check(lambda tape, z: tape.call(builtins.getattr, z, tape.const(name)), 1.5 - 0.5j, rng=rng)
        check(lambda tape, z: tape.call(builtins.getattr, z, tape.const(name)), 1.5, rng=rng)


@pytest.mark.parametrize("k", [0, 1, -1])
def test_diagonals_and_trace(k: int, rng: np.random.Generator) -> None:
    m = rng.standard_normal((3, 4))
    check(call(np.diag, k), m, rng=rng)
    check(call(np.diagonal, k), m, rng=rng)
    check(call(np.trace, k), m, rng=rng)
    check(call(np.ndarray.trace), m, rng=rng)
    check(call(np.diag, k), rng.standard_normal(3), rng=rng)
    check(call(np.diagflat, k), rng.standard_normal((2, 2)), rng=rng)


def test_divmod(rng: np.random.Generator) -> None:
    def remainder(tape: t.Any, a: t.Any, b: t.Any) -> t.Any:
        return tape.call(operator.getitem, tape.call(divmod, a, b), tape.const(1))

    check(remainder, 7.3, 2.1, rng=rng)
    check(remainder, rng.uniform(1, 3, 4), 0.7, rng=rng)
    check_call(np.divmod, rng.uniform(1, 3, 4), rng.uniform(0.5, 0.7, 4), rng=rng)


def test_dict_constructor(rng: np.random.Generator) -> None:
    from gibbous.ir import runtime

    def program(tape: t.Any, a: t.Any, d: t.Any) -> t.Any:
        pairs = tape.call(runtime.make_list, tape.call(runtime.make_tuple, tape.const("x"), a))
        made = tape.call(dict, pairs, y=tape.call(operator.mul, a, a))
        copied = tape.call(dict, d)
        x = tape.call(operator.getitem, made, tape.const("x"))
        y = tape.call(operator.getitem, made, tape.const("y"))
        z = tape.call(operator.getitem, copied, tape.const("z"))
        return tape.call(operator.mul, tape.call(operator.add, x, y), z)

    check(program, 1.5, {"z": -0.5}, rng=rng)


def test_comparisons_and_bitwise_have_no_derivative(rng: np.random.Generator) -> None:
    x = rng.standard_normal(3)
    for op in (operator.lt, operator.eq, operator.ge, operator.ne):
        assert not np.any(gradient(call(op, 0.0), x)[0])
        assert gradient(call(op, 0.5), 1.5) == [0.0]
    for op in (operator.and_, operator.or_, operator.xor):
        assert gradient(call(op, 6), 3) == [NT]

    class Weird:
        def __lt__(self, other: object) -> float:
            return 1.5

    with pytest.raises(NotImplementedError, match="comparisons only as booleans"):
        gradient(call(operator.lt, 1), Weird())


def test_more_views(rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 1, 4))
    check(call(np.ndarray.squeeze), x, rng=rng)
    check(call(np.squeeze, 1), x, rng=rng)
    check(call(np.moveaxis, 0, -1), x, rng=rng)
    check(call(np.atleast_2d), rng.standard_normal(3), rng=rng)
    check(call(np.atleast_1d), rng.standard_normal(3), rng=rng)  # the array itself
    check(call(np.ravel, order="F"), x[:, 0, :], rng=rng)


# --------------------------------------------------------------------------------------------
# gibbous.library.arrays.shapes, and programs through gibbous.grad


def _finite_difference_gradient(f: t.Callable[..., float], x: np.ndarray) -> np.ndarray:
    g, h = np.zeros_like(x), 1e-6
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def _broadcast_products(x: np.ndarray) -> float:
    b = np.broadcast_to(x[:, :1], (3, 2, 2))
    return float(np.sum(b * b) + np.sum(b * x[0, :2]))


def _rearrangements(x: np.ndarray) -> float:
    m = np.tile(x[0], 2) + np.flip(x.ravel())[:6] + np.roll(x, 1).ravel()
    s = np.sort(x, axis=None)
    p = np.pad(x, 1, constant_values=0.3) * np.repeat(x[0], [2, 1, 2])
    parts = np.array_split(x, 2, axis=1)
    taken = np.take(x, [1, 1, 4]) * np.take_along_axis(x, np.argsort(x, axis=1), 1)[0]
    return float(np.sum(m * s) + np.sum(p ** 2) + np.sum(parts[1] ** 3) + np.sum(taken))


def _writes(x: np.ndarray) -> float:
    y = np.zeros((3, 3))
    y[0] = x[0]
    y[1:, :2] = x[:, ::2]
    y[..., 2] += x[1]
    y[np.array([2, 2])] = x[1] * 3.0  # repeated: the last write counts
    y[y < 0.2] = -1.0
    y[[0, 1], [2, 2]] = y[[1, 0], [0, 1]] ** 2
    return float(np.sum(np.diagonal(y) ** 2) + np.trace(y) + np.sum(y.T[1:] ** 2))


def _in_place(x: np.ndarray) -> float:
    y = x * 1.0
    y.sort()
    z = x.T.copy()
    z.sort(axis=0)
    w = np.empty(3)
    w.fill(x[0, 1])
    np.copyto(w, x[1] ** 2)
    u = np.zeros((2, 3))
    np.copyto(u, x[0])
    u[0] = x[1]
    return float(
        np.sum(y * np.arange(3.0)) + np.sum(z[0] ** 3) + np.sum(w * x[0]) + np.sum(u**2)
        + x.item(4) * x.item(0, 1) + np.sum(np.diff(x, axis=1) ** 2)
    )  # fmt: skip


def _to_lists(x: np.ndarray) -> float:
    rows = x.tolist()
    total = 0.0
    for row in rows:
        for v in row:
            total += v * v
    return total + rows[1][2] * 3.0 + x[0].tolist()[1] * x.item(3)


@pytest.mark.parametrize(
    "f",
    [_broadcast_products, _rearrangements, _writes, _in_place, _to_lists],
    ids=lambda f: f.__name__,
)
def test_programs_match_finite_differences(f: t.Callable[..., float]) -> None:
    import gibbous

    x = np.array([[0.7, -0.2, 0.4], [0.1, 0.9, -0.5]])  # rows not sorted
    np.testing.assert_allclose(gibbous.grad(f)(x), _finite_difference_gradient(f, x), atol=1e-6)


def test_broadcast_to_sums_its_cotangent_back(rng: np.random.Generator) -> None:
    # Not in the audit: the harness wants the same (zero-stride) view of x's fdata, where
    # in-place additions would keep one cotangent of the repeats (see the rule).
    from gibbous.audit.cases.arrays.arrays import BROADCAST

    for c in BROADCAST:
        tape = Tape()
        (v,) = tape.inputs(c.args[0])
        y = tape.call(np.broadcast_to, v, tape.const(c.args[1]))
        y.fdata[...] = 1.0
        tape.backward()
        repeats = y.primal.size // max(c.args[0].size, 1)
        np.testing.assert_allclose(v.fdata, np.full(c.args[0].shape, float(repeats)))


def test_flips_splits_and_diagonals_are_views_of_the_fdata(rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4))
    tape = Tape()
    (v,) = tape.inputs(x)
    for fn, args in [(np.flip, ()), (np.fliplr, ()), (np.rot90, (1,)), (np.diagonal, (1,))]:
        y = tape.call(fn, v, *map(tape.const, args))
        assert np.shares_memory(y.fdata, v.fdata) and y.fdata.strides == y.primal.strides
        assert y.fdata.flags.writeable
    pieces = tape.call(np.split, v, tape.const(2), tape.const(1))
    for piece, fdata in zip(pieces.primal, pieces.fdata):
        assert np.shares_memory(fdata, v.fdata) and fdata.strides == piece.strides


# --------------------------------------------------------------------------------------------
# Random numbers


def _random_cases() -> list[t.Any]:
    from gibbous.audit.cases.arrays.arrays import RANDOM

    return RANDOM


@pytest.mark.parametrize("case", _random_cases(), ids=lambda c: c.id)
def test_random_rules(case: t.Any) -> None:
    case.run(perf="allocs")


def _state(g: t.Any) -> str:
    return repr(g.bit_generator.state if isinstance(g, np.random.Generator) else g.get_state())


@pytest.mark.parametrize(
    "fn, args",
    [
        (np.random.Generator.normal, (0.5, 2.0, 3)),
        (np.random.Generator.normal, (0.5,)),
        (np.random.Generator.uniform, (np.array([0.1, 0.2]), 1.5)),
        (np.random.Generator.integers, (0, 10, 4)),
        (np.random.Generator.standard_normal, (3,)),
        (np.random.RandomState.normal, (0.5, 2.0)),
        (np.random.RandomState.rand, (3,)),
    ],
    ids=lambda v: getattr(v, "__qualname__", None),
)
def test_forward_and_reverse_advance_the_generator_once(fn: t.Any, args: t.Any) -> None:
    from gibbous.ir.types import typeof
    from gibbous.rules.registry import DefaultContext, build_primitive_rrule
    from gibbous.tangents.model import zero_coduals

    generator = fn.__qualname__.startswith("Generator")
    make = np.random.default_rng if generator else np.random.RandomState
    rng, reference = make(5), make(5)
    expected = fn(reference, *args)
    rule = build_primitive_rrule(DefaultContext, fn, [typeof(rng), *map(typeof, args)])
    for _ in range(2):  # the second call warm
        operands = zero_coduals(fn, rng, *args)
        y, pullback = rule(*operands)
        np.testing.assert_array_equal(y.primal, expected)
        if isinstance(y.fdata, np.ndarray):
            y.fdata[...] = 1.0
        pullback(1.0 if isinstance(y.primal, float) else NT)
        assert _state(rng) == _state(reference)  # drawn once, never rewound
        expected = fn(reference, *args)


def test_gradients_of_draws_in_a_program() -> None:
    import gibbous

    def f(mu: float, rng: np.random.Generator) -> float:
        z = rng.normal(mu, 2.0, size=3)  # d z / d mu = 1
        u = rng.uniform(mu, 3.0)  # d u / d mu = 1 - (u - mu) / (3 - mu)
        w = np.random.normal(mu, 1.0)  # the legacy function, NumPy's global RandomState
        k = rng.integers(0, 5)
        return float(np.sum(z) + 2.0 * u + w + k)

    rng, reference = np.random.default_rng(3), np.random.default_rng(3)
    np.random.seed(4)
    mu_gradient = gibbous.grad(f)(0.25, rng)
    reference.normal(0.25, 2.0, size=3)
    u = reference.uniform(0.25, 3.0)
    reference.integers(0, 5)
    assert _state(rng) == _state(reference)
    np.testing.assert_allclose(mu_gradient, 3.0 + 2.0 * (1 - (u - 0.25) / 2.75) + 1.0)


# Views of arrays whose fdata cannot have their layout (``common.view_fdata``): a broadcast and
# an overlapping window view get new contiguous fdata, and a view of them the same view of it.


def _view_of_a_broadcast(x: np.ndarray) -> t.Any:
    b = np.broadcast_to(x[:3], (4, 3))
    return np.sum(np.transpose(b) * x[2:6]) + np.sum(b[1:, ::2] ** 2) + np.sum(np.real(b.T)[0])


def _view_of_a_window_view(x: np.ndarray) -> t.Any:
    w = np.lib.stride_tricks.sliding_window_view(x, 3)
    return np.sum(w[::2, :] ** 2) + np.sum(w.T[1] * x[:4])


def _strided_view_of_a_broadcast(x: np.ndarray) -> t.Any:
    # (distinct elements of x, by the broadcast's strides, which its fdata does not have)
    b = np.broadcast_to(x[:, None], (6, 4))
    s = np.lib.stride_tricks.as_strided(b, (3,), (2 * b.strides[0],))
    return np.sum(s**2 * np.array([1.0, 2.0, 3.0]))


def _empty_views(x: np.ndarray) -> t.Any:
    return np.sum(x**2) + np.sum(x[3:3]) + np.sum(np.broadcast_to(x[:1], (0,)))


@pytest.mark.parametrize(
    "f, modes",
    [
        (_view_of_a_broadcast, "rfh"),
        (_view_of_a_window_view, "r"),
        (_strided_view_of_a_broadcast, "r"),
        (_empty_views, "rfh"),
    ],
)
def test_views_of_arrays_whose_fdata_has_other_strides(f: t.Any, modes: str) -> None:
    from tests.library.programs import check_program

    check_program(f, np.linspace(0.3, 1.4, 6), modes=modes)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(np.arange(start=x[0], stop=3.0, step=x[1]) ** 2),
        lambda x: np.sum(np.arange(x[0], stop=3.0, step=x[1]) ** 2),
        lambda x: np.sum(np.arange(x[0], 3.0, step=x[1]) ** 2),
        lambda x: np.sum(np.arange(step=x[1], start=x[0], stop=3.0, dtype=float) ** 2),
        lambda x: np.sum(np.arange(start=x[0], stop=3.0) ** 2),
        lambda x: x[0] * np.sum(np.arange(stop=3.0)) + x[1],
    ],
)
def test_arange_by_keyword(f: t.Any) -> None:
    """``np.arange(start=..., stop=..., step=...)`` (scipy.signal.iirfilter): start and step
    as by position, stop alone has no derivative."""
    from tests.library.programs import check_program

    check_program(f, np.array([0.3, 0.4]), modes="rf")


def test_arange_with_an_argument_it_does_not_take_is_a_gibbous_error() -> None:
    import gibbous
    from gibbous.ir.exceptions import UnsupportedArgumentError

    with pytest.raises(UnsupportedArgumentError):
        gibbous.grad(lambda x: np.sum(np.arange(x, 3.0, like=np.zeros(1))))(0.5)
