"""Strided views, np.r_/np.c_, nan_to_num, np.gradient, partition, rollaxis, append, insert,
delete and unique, on the tape against central finite differences (the audit's cases are in
gibbous/audit/cases/arrays/array_tools.py; programs through gibbous.grad in
tests/ad/test_array_tools.py)."""

from __future__ import annotations

import operator
import typing as t

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from gibbous.ir import runtime
from gibbous.tangents.model import NoTangent
from tests.library.harness import Tape, call, check, check_like_float64, gradient

NT = NoTangent()
Program = t.Callable[..., t.Any]


def _complex(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _then_square(program: Program) -> Program:
    """The program, then ``y * y``: a later rule that reads the result (and its fdata)."""

    def squared(tape: t.Any, *xs: t.Any) -> t.Any:
        y = program(tape, *xs)
        return tape.call(np.multiply, y, y)

    return squared


# --------------------------------------------------------------------------------------------
# as_strided and sliding_window_view

STRIDED = [
    ("windows of 3", (6,), call(as_strided, (4, 3), (8, 8))),
    ("every other start", (7,), call(as_strided, shape=(3, 3), strides=(16, 8))),
    ("2-D windows", (3, 4), call(as_strided, (2, 3, 2, 2), (32, 8, 32, 8))),
    ("a row repeated", (4,), call(as_strided, (3, 4), (0, 8))),
    ("a reshape", (6,), call(as_strided, (3, 2), (16, 8))),
    ("a transpose", (3, 4), call(as_strided, (4, 3), (8, 32))),
    ("sliding 1-D", (6,), call(sliding_window_view, 3)),
    ("sliding 2-D", (3, 4), call(sliding_window_view, (2, 2))),
    ("sliding one axis", (3, 4), call(sliding_window_view, 2, axis=1)),
    ("sliding two axes", (3, 4), call(sliding_window_view, (2, 3), (1, 0))),
    ("sliding windows of one", (5,), call(sliding_window_view, 1)),
]


@pytest.mark.parametrize("label, shape, program", STRIDED, ids=[s[0] for s in STRIDED])
def test_strided_views(label: str, shape: tuple[int, ...], program: Program,
                       rng: np.random.Generator) -> None:  # fmt: skip
    x = rng.standard_normal(shape)
    check(program, x, rng=rng)
    check(_then_square(program), x, rng=rng)
    if "sliding" in label:  # the strides of as_strided's cases are for float64
        check(program, _complex(rng, *shape), rng=rng)
        check_like_float64(_then_square(program), x.astype(np.float32))


def test_strided_windows_of_other_dtypes(rng: np.random.Generator) -> None:
    check(call(as_strided, (4, 3), (16, 16)), _complex(rng, 6), rng=rng)
    out = check(call(as_strided, (4, 3), (4, 4)), rng.standard_normal(6).astype(np.float32),
                rng=rng, steps=(1e-2,), rtol=1e-3, atol=1e-4)  # fmt: skip
    assert out.grads[0].dtype == np.float32


def test_strided_views_of_views_and_reversed_arrays(rng: np.random.Generator) -> None:
    base = rng.standard_normal((3, 8))

    def of_a_view(tape: t.Any, b: t.Any) -> t.Any:
        columns = tape.const((slice(None), slice(None, None, 2)))
        every_other = tape.call(operator.getitem, b, columns)
        return tape.call(as_strided, every_other, tape.const((3, 3)), tape.const((64, 16)))

    def reversed_windows(tape: t.Any, v: t.Any) -> t.Any:
        back = tape.call(operator.getitem, v, tape.const(slice(None, None, -1)))
        return tape.call(sliding_window_view, back, tape.const(3))

    check(of_a_view, base, rng=rng)
    check(reversed_windows, rng.standard_normal(6), rng=rng)


def test_overlapping_windows_add_up_and_views_share_the_fdata(rng: np.random.Generator) -> None:
    x = rng.standard_normal(5)
    (g,) = gradient(call(sliding_window_view, 3), x)
    np.testing.assert_array_equal(g, [1.0, 2.0, 3.0, 2.0, 1.0])  # windows holding each element
    tape = Tape()
    (v,) = tape.inputs(x)
    y = tape.call(as_strided, v, tape.const((2, 2)), tape.const((16, 8)))  # distinct elements
    assert np.shares_memory(y.fdata, v.fdata) and y.fdata.strides == y.primal.strides
    w = tape.call(as_strided, v, tape.const((3, 3)), tape.const((8, 8)))  # overlapping
    assert not np.shares_memory(w.fdata, v.fdata)


@pytest.mark.parametrize(
    "x, shape, strides, match",
    [
        (np.zeros(6), (4, 3), (8, 4), "not multiples of x's itemsize"),
        (np.zeros(6), (4, 3), (16, 8), "outside x's elements"),
        (np.zeros(6), (2,), (-8,), "outside x's elements"),
        (np.zeros((3, 4))[:, ::2], (3, 2), (32, 8), "outside x's elements"),  # between them
        (np.zeros((3, 4))[:, ::2], (3, 3), (32, 8), "outside x's elements"),
    ],
)
def test_strided_views_outside_x_are_refused(
    x: np.ndarray, shape: t.Any, strides: t.Any, match: str
) -> None:
    with pytest.raises(TypeError, match=f"as_strided.*{match}"):
        gradient(call(as_strided, shape, strides), x)


# --------------------------------------------------------------------------------------------
# np.r_ and np.c_


def _indexed(concatenator: t.Any, *items: t.Any) -> Program:
    """``concatenator[items]``: inputs where an item is None, constants elsewhere."""

    def program(tape: t.Any, *xs: t.Any) -> t.Any:
        inputs = iter(xs)
        parts = [next(inputs) if item is None else tape.const(item) for item in items]
        key = parts[0] if len(parts) == 1 else tape.call(runtime.make_tuple, *parts)
        return tape.call(operator.getitem, tape.const(concatenator), key)

    return program


CONCATENATIONS = [
    ("r_ two vectors", _indexed(np.r_, None, None), [(3,), (2,)]),
    ("r_ with a scalar", _indexed(np.r_, None, 0.5, None), [(3,), (2,)]),
    ("r_ with a float input", _indexed(np.r_, None, None), [(3,), ()]),
    ("r_ one item", _indexed(np.r_, None), [(4,)]),
    ("r_ with a range", _indexed(np.r_, slice(0, 3), None, slice(1, 2, 3j)), [(2,)]),
    ("r_ matrices", _indexed(np.r_, None, None), [(2, 3), (1, 3)]),
    ("r_ along axis 1", _indexed(np.r_, "1", None, None), [(2, 3), (2, 1)]),
    ("r_ as rows", _indexed(np.r_, "0,2", None, None), [(3,), (3,)]),
    ("r_ as columns", _indexed(np.r_, "1,2,0", None, None), [(3,), (3, 2)]),
    ("c_ vectors", _indexed(np.c_, None, None), [(3,), (3,)]),
    ("c_ matrix and vector", _indexed(np.c_, None, None), [(3, 2), (3,)]),
    ("c_ with a range", _indexed(np.c_, slice(0, 3), None), [(3,)]),
]


@pytest.mark.parametrize(
    "label, program, shapes", CONCATENATIONS, ids=[c[0] for c in CONCATENATIONS]
)
def test_concatenators(label: str, program: Program, shapes: list[tuple[int, ...]],
                       rng: np.random.Generator) -> None:  # fmt: skip
    values = [rng.standard_normal(s) if s else float(rng.standard_normal()) for s in shapes]
    check(program, *values, rng=rng)
    check(program, *(_complex(rng, *s) if s else 0.5 - 1j for s in shapes), rng=rng)
    check_like_float64(program, *(np.asarray(v, np.float32) if s else v
                                  for v, s in zip(values, shapes)))  # fmt: skip


def test_concatenators_of_lists(rng: np.random.Generator) -> None:
    def with_a_list(tape: t.Any, a: t.Any, v: t.Any) -> t.Any:
        items = tape.call(runtime.make_list, a, tape.const(2.0))
        key = tape.call(runtime.make_tuple, items, v)
        return tape.call(operator.getitem, tape.const(np.r_), key)

    check(with_a_list, 0.5, rng.standard_normal(3), rng=rng)


@pytest.mark.parametrize("key, match", [(("r", np.ones(2)), "matrix directive"),
                                        ("1 2; 3 4", "string key")])  # fmt: skip
def test_matrix_concatenations_are_refused(key: t.Any, match: str) -> None:
    with pytest.raises(NotImplementedError, match=match):
        gradient(lambda tape: tape.call(operator.getitem, tape.const(np.r_), tape.const(key)))


# --------------------------------------------------------------------------------------------
# nan_to_num


@pytest.mark.parametrize("kwargs", [{}, {"nan": 1.5, "posinf": 2.5, "neginf": -3.5},
                                    {"copy": False}, {"copy": True, "nan": -1.0}])  # fmt: skip
def test_nan_to_num_of_finite_values(kwargs: dict[str, t.Any], rng: np.random.Generator) -> None:
    check(call(np.nan_to_num, **kwargs), rng.standard_normal((3, 4)), rng=rng)
    check(_then_square(call(np.nan_to_num, **kwargs)), rng.standard_normal(5), rng=rng)
    check(call(np.nan_to_num, **kwargs), _complex(rng, 4), rng=rng)
    check_like_float64(call(np.nan_to_num, **kwargs), rng.standard_normal(4).astype(np.float32))
    if kwargs.get("copy", True):  # NumPy cannot overwrite a Python float
        check(call(np.nan_to_num, **kwargs), 1.5, rng=rng)


@pytest.mark.parametrize("copy", [True, False])
def test_nan_to_num_sends_cotangents_to_the_fill_values(copy: bool) -> None:
    x = np.array([0.5, np.nan, np.inf, -2.0, -np.inf, np.nan])

    def program(tape: t.Any, x: t.Any, nan: t.Any, big: t.Any) -> t.Any:
        y = tape.call(np.nan_to_num, x, copy=tape.const(copy), nan=nan, posinf=big)
        # (0.5 where neginf puts the lowest float: more would overflow)
        return tape.call(np.multiply, y, tape.const(np.array([1.0, 2.0, 3.0, 4.0, 0.5, 6.0])))

    gx, gnan, gbig = gradient(program, x.copy(), 0.25, 9.0)
    np.testing.assert_array_equal(gx, [1.0, 0.0, 0.0, 4.0, 0.0, 0.0])  # finite places only
    assert (gnan, gbig) == (2.0 + 6.0, 3.0)  # neginf=None: a constant, nothing to send

    tape = Tape()
    v, nan, big = tape.inputs(x.copy(), 0.25, 9.0)
    y = tape.call(np.nan_to_num, v, copy=tape.const(copy), nan=nan, posinf=big)
    assert (y.primal is v.primal) == (not copy)
    y.fdata[...] += 1.0
    tape.backward()
    np.testing.assert_array_equal(v.primal, x)  # restored where copy=False overwrote it


def test_nan_to_num_of_complex_values_treats_each_part() -> None:
    z = np.array([complex(1.0, np.nan), complex(np.inf, 2.0), 0.5 - 0.5j])
    gz, gnan = gradient(lambda tape, z, nan: tape.call(np.nan_to_num, z, nan=nan), z, 0.25,
                        seed=1.0 + 1.0j)  # fmt: skip
    np.testing.assert_array_equal(gz, [1.0, 1.0j, 1.0 + 1.0j])
    assert gnan == 1.0  # the imaginary part of the first element


# --------------------------------------------------------------------------------------------
# np.gradient


def _coordinates(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.cumsum(rng.uniform(0.5, 1.5, n))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_of_vectors(edge_order: int, rng: np.random.Generator) -> None:
    f = rng.standard_normal(6)
    loose = {"rtol": 1e-5, "atol": 1e-7}  # the coordinates' derivatives are steep
    check(call(np.gradient, edge_order=edge_order), f, rng=rng)
    check(lambda tape, f, h: tape.call(np.gradient, f, h, edge_order=tape.const(edge_order)),
          f, 0.7, rng=rng)  # fmt: skip
    check(lambda tape, f, c: tape.call(np.gradient, f, c, edge_order=tape.const(edge_order)),
          f, _coordinates(rng, 6), rng=rng, **loose)  # fmt: skip
    check(call(np.gradient, 0.5, edge_order=edge_order), _complex(rng, 5), rng=rng)
    check_like_float64(call(np.gradient, edge_order=edge_order), f.astype(np.float32))
    check(call(np.gradient, edge_order=1), f[:2], rng=rng)  # the shortest: ends only


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (1, 0)])
def test_gradient_of_matrices(axis: t.Any, rng: np.random.Generator) -> None:
    f = rng.standard_normal((4, 5))

    def program(tape: t.Any, f: t.Any, *spacings: t.Any) -> t.Any:
        options = {"axis": tape.const(axis), "edge_order": tape.const(2)}
        found = tape.call(np.gradient, f, *spacings, **options)
        if isinstance(getattr(found, "primal", found), tuple):  # one array per axis
            count = len(getattr(found, "primal", found))
            parts = [tape.call(operator.getitem, found, tape.const(i)) for i in range(count)]
            squares = [tape.call(np.multiply, p, p) for p in parts]
            return tape.call(np.add, squares[0], squares[1])
        return tape.call(np.multiply, found, found)

    check(program, f, rng=rng)
    check(program, f, 0.5, rng=rng)
    if axis in (0, None):
        spacings = (_coordinates(rng, 4),) if axis == 0 else (_coordinates(rng, 4), 1.5)
        check(program, f, *spacings, rng=rng, rtol=1e-5, atol=1e-7)


def test_gradient_with_integer_data_and_spacings(rng: np.random.Generator) -> None:
    check(call(np.gradient, 2), [0.5, 1.5, -2.0, 0.25], rng=rng)
    assert not np.any(gradient(call(np.gradient), np.arange(4))[0] is not NT)


# --------------------------------------------------------------------------------------------
# partition and rollaxis


@pytest.mark.parametrize("kth, kwargs", [(2, {}), ((0, 3), {}), (1, {"axis": 0}),
                                         (5, {"axis": None})])  # fmt: skip
def test_partition(kth: t.Any, kwargs: dict[str, t.Any], rng: np.random.Generator) -> None:
    x = (rng.permutation(12).reshape(3, 4) - 5.5) * 0.3  # distinct: no ties
    check(call(np.partition, kth, **kwargs), x, rng=rng)
    check(call(np.partition, kth, **kwargs), x + 1j * rng.standard_normal((3, 4)), rng=rng)
    check_like_float64(call(np.partition, kth, **kwargs), x.astype(np.float32))


def test_partition_sends_each_cotangent_to_its_value(rng: np.random.Generator) -> None:
    x = np.array([0.3, -1.2, 2.5, 0.9, 1.7])
    (g,) = gradient(call(np.partition, 2), x, seed=np.arange(5.0))
    y = np.partition(x, 2)
    np.testing.assert_array_equal(g[np.argsort(x)], np.arange(5.0)[np.argsort(y)])


@pytest.mark.parametrize("kth, axis", [(2, -1), ([0, 3], -1), (-1, 0), (1, None)])
def test_partition_read_at_its_kth_positions_only(kth: t.Any, axis: t.Any, rng: np.random.Generator) -> None:
    """(The pullback's O(n) path: a cotangent at the k-th positions alone, as a median's.)"""
    x = (rng.permutation(12).reshape(3, 4) - 5.5) * 0.3
    y = np.partition(x, kth, axis=axis)
    ax = -1 if axis is None else axis
    at = np.mod(np.atleast_1d(kth), y.shape[ax])
    seed = np.zeros(y.shape)
    where: list[t.Any] = [slice(None)] * y.ndim
    where[ax] = at
    shape = [1] * y.ndim
    shape[ax] = at.size
    seed[tuple(where)] = (1.0 + np.arange(at.size)).reshape(shape)
    (g,) = gradient(call(np.partition, kth, axis=axis), x, seed=seed)
    flat = x.reshape(-1) if axis is None else x
    expected = np.zeros(flat.shape)
    order = np.argsort(flat, axis=ax)  # (distinct values: the k-th smallest is one element)
    np.put_along_axis(expected, order, np.take_along_axis(seed, np.argsort(y, axis=ax), ax), axis=ax)
    np.testing.assert_array_equal(g, expected.reshape(x.shape))


@pytest.mark.parametrize("args", [(2,), (1, 0), (-1, 1), (0, 3)])
def test_rollaxis_is_a_view(args: tuple[int, ...], rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3, 4))
    check(call(np.rollaxis, *args), x, rng=rng)
    check(_then_square(call(np.rollaxis, *args)), _complex(rng, 2, 3, 4), rng=rng)
    tape = Tape()
    (v,) = tape.inputs(x)
    y = tape.call(np.rollaxis, v, *map(tape.const, args))
    assert np.shares_memory(y.fdata, v.fdata) and y.fdata.strides == y.primal.strides


# --------------------------------------------------------------------------------------------
# append, insert, delete, unique

SETOPS = [
    ("append flat", np.append, (3, 4), [(2,)], {}),
    ("append rows", np.append, (3, 4), [(1, 4)], {"axis": 0}),
    ("append a scalar", np.append, (4,), [()], {}),
    ("insert a scalar", np.insert, (4,), [1, ()], {}),
    ("insert a row", np.insert, (3, 4), [1, (4,)], {"axis": 0}),
    ("insert one value thrice", np.insert, (3, 4), [[0, 2, 2], ()], {"axis": 1}),
    ("insert a column", np.insert, (3, 4), [2, (3,)], {"axis": 1}),
    ("insert by a slice", np.insert, (2, 3), [slice(0, 2), (2,)], {}),
    ("delete one", np.delete, (5,), [1], {}),
    ("delete rows", np.delete, (3, 4), [[0, 2]], {"axis": 0}),
    ("delete by a mask", np.delete, (3, 4), [np.array([True, False, True, False])], {"axis": 1}),
    ("delete a slice", np.delete, (3, 4), [slice(1, 3)], {}),
]


@pytest.mark.parametrize("label, fn, shape, rest, kwargs", SETOPS, ids=[s[0] for s in SETOPS])
def test_append_insert_delete(
    label: str,
    fn: t.Any,
    shape: tuple[int, ...],
    rest: list[t.Any],
    kwargs: dict[str, t.Any],
    rng: np.random.Generator,
) -> None:
    def program(tape: t.Any, x: t.Any, *values: t.Any) -> t.Any:
        inputs = iter(values)
        args = [next(inputs) if isinstance(r, tuple) else tape.const(r) for r in rest]
        return tape.call(fn, x, *args, **{k: tape.const(v) for k, v in kwargs.items()})

    def draw(s: tuple[int, ...], complex_: bool = False) -> t.Any:
        if complex_:
            return _complex(rng, *s) if s else 0.5 - 1.5j
        return rng.standard_normal(s) if s else float(rng.standard_normal())

    shapes = [r for r in rest if isinstance(r, tuple)]
    check(program, draw(shape), *(draw(s) for s in shapes), rng=rng)
    check(program, draw(shape, True), *(draw(s, True) for s in shapes), rng=rng)
    check(program, draw(shape, True), *(draw(s) for s in shapes), rng=rng)  # real into complex
    values = [np.float32(draw(s)) if s == () else draw(s).astype(np.float32) for s in shapes]
    check_like_float64(program, draw(shape).astype(np.float32), *values)


def test_append_and_insert_of_lists(rng: np.random.Generator) -> None:
    check(call(np.append, rng.standard_normal(2)), [0.5, -1.5], rng=rng)
    def into_a_list(tape: t.Any, a: t.Any, v: t.Any) -> t.Any:
        values = tape.call(runtime.make_list, a, tape.const(2.0), a)
        return tape.call(np.insert, v, tape.const(1), values)

    check(into_a_list, 0.5, rng.standard_normal(3), rng=rng)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"return_index": True, "return_counts": True}, {"return_inverse": True}, {"axis": 0},
     {"axis": 1}],
)  # fmt: skip
def test_unique_of_distinct_values(kwargs: dict[str, t.Any], rng: np.random.Generator) -> None:
    x = (rng.permutation(12).reshape(3, 4) - 5.5) * 0.3

    def values(tape: t.Any, x: t.Any) -> t.Any:
        found = tape.call(np.unique, x, **{k: tape.const(v) for k, v in kwargs.items()})
        if isinstance(getattr(found, "primal", found), tuple):
            return tape.call(operator.getitem, found, tape.const(0))
        return found

    check(values, x, rng=rng)
    check(values, x + 1j, rng=rng)
    check_like_float64(values, x.astype(np.float32))


def test_unique_sends_a_repeated_value_s_cotangent_to_its_first_occurrence() -> None:
    x = np.array([3.0, 1.0, 2.0, 1.0, 3.0, 3.0])
    (g,) = gradient(call(np.unique), x, seed=np.array([10.0, 20.0, 30.0]))  # for 1, 2, 3
    np.testing.assert_array_equal(g, [30.0, 10.0, 20.0, 0.0, 0.0, 0.0])
    rows = np.array([[1.0, 2.0], [0.5, 0.5], [1.0, 2.0]])
    (g,) = gradient(call(np.unique, axis=0), rows, seed=np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(g, [[3.0, 4.0], [1.0, 2.0], [0.0, 0.0]])
    nans = np.array([np.nan, 1.0, np.nan])
    (g,) = gradient(call(np.unique), nans, seed=np.array([1.0, 2.0]))  # one nan (equal_nan)
    np.testing.assert_array_equal(g, [2.0, 1.0, 0.0])


# --------------------------------------------------------------------------------------------
# Types and purity


def _typed(f: t.Callable[..., t.Any], *args: t.Any) -> str:
    """The type of f's last call, as type inference gives it."""
    from gibbous import inspect as gi

    calls = [line for line in str(gi.code_ir(f, *args, stage="typed")).splitlines()
             if "= call" in line]  # fmt: skip
    return calls[-1].split(" : ")[-1].split(" loc(")[0]


@pytest.mark.parametrize(
    "f, expected",
    [
        (lambda x, m: as_strided(x, (3, 2), (8, 8)), "f64[:,:]"),
        (lambda x, m: sliding_window_view(m, (2, 2)), "f64[:,:,:,:]"),
        (lambda x, m: np.r_[x, 0.5, x], "f64[:]"),
        (lambda x, m: np.c_[x, x], "f64[:,:]"),
        (lambda x, m: np.r_["0,2", x.astype(np.float32), x.astype(np.float32)], "f32[:,:]"),
        (lambda x, m: np.r_["1 2"], "any"),
        (lambda x, m: np.gradient(x), "f64[:]"),
        (lambda x, m: np.gradient(m), "tuple[f64[:,:], f64[:,:]]"),
        (lambda x, m: np.gradient(m, 0.5, axis=-1), "f64[:,:]"),
        (lambda x, m: np.partition(m, 1), "f64[:,:]"),
        (lambda x, m: np.partition(m, 1, axis=None), "f64[:]"),
        (lambda x, m: np.argpartition(x, 2), "i64[:]"),
        (lambda x, m: np.rollaxis(m, 1), "f64[:,:]"),
        (lambda x, m: np.delete(m, 1, 0), "f64[:,:]"),
        (lambda x, m: np.insert(m, [1, 2], 2.5), "f64[:]"),
        (lambda x, m: np.nan_to_num(m), "f64[:,:]"),
    ],
)
def test_types(f: t.Callable[..., t.Any], expected: str) -> None:
    assert _typed(f, np.arange(5.0), np.ones((3, 4))) == expected


def test_purity() -> None:
    from gibbous.ir import types as T
    from gibbous.ir.purity import is_pure

    x = T.Array("float64", 1)
    for fn in (np.gradient, np.partition, np.rollaxis, np.append, np.insert, np.delete,
               np.unique, as_strided, sliding_window_view):  # fmt: skip
        assert is_pure(fn, (x, T.Const(1))), fn
    assert is_pure(np.nan_to_num, (x,), {"nan": T.FLOAT})
    assert not is_pure(np.nan_to_num, (x,), {"copy": T.Const(False)})  # overwrites x
    assert not is_pure(np.nan_to_num, (x, T.BOOL))
