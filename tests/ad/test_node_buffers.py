"""Per-node buffers (``gibbous.rules.buffers``; issue 14, point 2): an array site of a derived
rule whose result does not escape the forward program computes with ``out=`` into a buffer it
keeps across calls, one per pending depth.

What this file specifies:

* a warm call writes into the buffers the first call made, and its gradients are those of
  central finite differences, with other argument values each call (a stale buffer would show);
* a site run several times before the reverse pass has one buffer per pending run, and
  ``rule.memory().buffers`` grows with the runs and not with the calls;
* operand shapes that change between calls (a longer vector, another broadcast, the same
  result shape from other operand shapes) never compute into a buffer of other shapes;
* a result that escapes (returned, stored, sliced, passed to a rule, carried by a loop) is not
  buffered, and what a call hands back never changes with a later call;
* recursion, a derived call in a loop, pending forward passes, an exception half way through
  a forward pass and abandoned pullbacks leave the buffers right for the next call;
* threads sharing a rule get their own buffers;
* ``rule.memory()`` counts the buffers, exactly;
* sites use their buffers only while their rule keeps them (``buffers.MODE.keep``, which
  ``prepare_gradient`` sets; ``value_and_gradient`` computes as the primal does); the rest of
  this file asks for them.
"""

from __future__ import annotations

import copy
import re
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.inspect import code_ir
from gibbous.rules import buffers
from gibbous.rules.buffers import SiteBuffers
from gibbous.reverse.derived import PartialCallError
from gibbous.reverse.memory import Memory
from gibbous.tangents.model import NO_TANGENT, CoDual
from gibbous.testing.allocations import measure
from tests.ad.conftest import check
from tests.rules.fd import check_gradient
from tests.test_threads import _run_threads, contention  # noqa: F401  (a fixture)

Array = np.ndarray[t.Any, t.Any]

@pytest.fixture(autouse=True)
def keep() -> t.Iterator[None]:
    """This thread's calls keep buffers, as ``prepare_gradient``'s do."""
    buffers.MODE.keep = True
    try:
        yield
    finally:
        buffers.MODE.keep = False


_INTO = re.compile(r"buffers_into(?:1|_aa|_a)\(ad\.buffers_\d+, ([\w.]+),")


def buffered(f: t.Callable[..., t.Any], *args: object) -> list[str]:
    """The callables of ``f``'s buffered sites, in the order of its forward program's text
    (what ``gibbous.build_rrule`` compiles: tests/test_inspect.py)."""
    return _INTO.findall(str(code_ir(f, *args, stage="forward")))


def unbuffered(f: t.Callable[..., t.Any], *args: object) -> list[str]:
    """The callables of array sites of ``f``'s forward program called as they are (named
    ``numpy.x`` or ``operator.x``), not into a buffer."""
    text = str(code_ir(f, *args, stage="forward"))
    return re.findall(r"= call ((?:numpy|operator)\.\w+)\(", text)


def memory(rule: object) -> Memory:
    """``rule.memory()``, of a rule ``check`` returns too (typed there as a ``DerivedRule``;
    the top-level rule ``build_rrule`` makes has ``memory``)."""
    return t.cast(Memory, t.cast(t.Any, rule).memory())


def site_buffers(rule: t.Any) -> list[SiteBuffers]:
    """The calling thread's instance's site buffers (``rule.memory()`` walks the same)."""
    mine = getattr(rule.threads.local, "rule", None)
    instance = rule if mine is None else mine
    return [c for c in instance.children if isinstance(c, SiteBuffers)]


def fd_at(f: t.Callable[..., t.Any], args: tuple[t.Any, ...], y: float, grads: t.Any) -> None:
    """The value and gradient one call gave, checked against ``f`` and finite differences."""
    assert np.isclose(y, f(*args), rtol=1e-12, atol=0)
    check_gradient(f, args, grads[1:], np.random.default_rng(5), rtol=1e-6, atol=1e-8)


# --- 1. straight-line chains: warm calls into the same buffers, other values ------------------


def trig(x: Array) -> float:
    # sin, cos and their product: three buffered sites of x's shape
    return float(np.sum(np.sin(x) * np.cos(x)))


def chain(A: Array, buffers: Array, x: Array) -> float:
    # np.dot, @, sin, ** 2, cos, *, -: every intermediate read by array forms only
    z = np.dot(A, buffers) @ x
    return float(np.sum(np.sin(z) ** 2 - np.cos(z) * z))


def layer(W: Array, b: Array, V: Array, X: Array) -> float:
    return float(np.sum((np.tanh(X @ W + b) @ V) ** 2))


def chain_args(rng: np.random.Generator) -> tuple[Array, Array, Array]:
    return rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal(5)


def layer_args(rng: np.random.Generator) -> tuple[Array, Array, Array, Array]:
    return (
        rng.standard_normal((3, 4)) / 2,
        rng.standard_normal(4),
        rng.standard_normal((4, 2)),
        rng.standard_normal((6, 3)),
    )


def test_the_sites_of_a_chain_are_buffered() -> None:
    """The premise of the rest: these sites do compute into buffers (a pass that buffered
    nothing would pass every gradient check below)."""
    rng = np.random.default_rng(0)
    assert buffered(trig, rng.standard_normal(5)) == ["numpy.sin", "numpy.cos", "numpy.multiply"]
    sites = buffered(chain, *chain_args(rng))
    assert sites[:2] == ["numpy.dot", "numpy.matmul"]
    # ``x ** 2`` computes as NumPy does it, ``np.square``
    assert {"numpy.sin", "numpy.square", "numpy.cos", "numpy.multiply"} <= set(sites)
    assert "numpy.subtract" in sites
    assert {"numpy.matmul", "numpy.add"} <= set(buffered(layer, *layer_args(rng)))


@pytest.mark.parametrize(
    "f, make",
    [
        (trig, lambda rng: (rng.standard_normal(6),)),
        (chain, chain_args),
        (layer, layer_args),
    ],
    ids=["trig", "chain", "layer"],
)
def test_warm_calls_with_other_values_reuse_the_buffers_and_are_right(
    f: t.Any, make: t.Any
) -> None:
    """Each call with new values: a buffer holding the previous call's result, read by the
    reverse pass in place of this call's, would give the previous gradient."""
    rng = np.random.default_rng(1)
    rule = gibbous.build_rrule(f, *make(rng))
    check(f, *make(rng), rule=rule)
    held = memory(rule).buffers
    assert held > 0
    arrays = [id(a) for s in site_buffers(rule) for a in s.arrays]
    for _ in range(3):
        check(f, *make(rng), rule=rule)
        assert memory(rule).buffers == held
        assert [id(a) for s in site_buffers(rule) for a in s.arrays] == arrays  # the same ones


def test_prepared_gradient_calls_are_right_with_other_values() -> None:
    """``prepare_gradient`` keeps its gradients' arrays too; the buffers under them are the
    rule's.  (Gradients copied: the next call writes into the same arrays.)"""
    rng = np.random.default_rng(2)
    args = layer_args(rng)
    cache = gibbous.prepare_gradient(layer, *args)
    for _ in range(3):
        args = layer_args(rng)
        y, grads = cache(*args)
        fd_at(layer, args, y, tuple(np.copy(g) if isinstance(g, np.ndarray) else g for g in grads))


def test_gradients_handed_back_are_not_changed_by_the_next_call() -> None:
    rng = np.random.default_rng(3)
    x1, x2 = rng.standard_normal(6), rng.standard_normal(6)
    rule = gibbous.build_rrule(trig, x1)
    y1, g1 = gibbous.value_and_gradient(rule, trig, x1)
    kept = np.copy(g1[1])
    gibbous.value_and_gradient(rule, trig, x2)
    assert np.array_equal(g1[1], kept)
    fd_at(trig, (x1,), y1, g1)


# --- 2. loops: one buffer per pending run -------------------------------------------------


def rnn(W: Array, U: Array, X: Array, h0: Array) -> float:
    h = h0
    for t_ in range(X.shape[0]):
        h = np.tanh(W @ h + U @ X[t_])
    return float(np.sum(h * h))


def sines(x: Array, n: int) -> float:
    s = 0.0
    for k in range(n):
        s += float(np.sum(np.sin(x * k)))
    return s


def until(x: Array, n: int) -> float:
    # ``z`` of the last run read after the loop (the body dominates the exit: no block
    # argument), so its site is buffered, one buffer per run
    k = 0
    while True:
        z = np.sin(x * k + 0.5)
        k += 1
        if k >= n:
            break
    return float(np.sum(z * z))


def rnn_args(rng: np.random.Generator, steps: int) -> tuple[Array, Array, Array, Array]:
    return (
        rng.standard_normal((4, 4)) / 2,
        rng.standard_normal((4, 3)) / 2,
        rng.standard_normal((steps, 3)),
        rng.standard_normal(4),
    )


def rnn_bytes(steps: int) -> int:
    """Three sites of h's 4 floats per step, and ``h * h`` once."""
    return 3 * steps * 4 * 8 + 4 * 8


def test_an_rnn_of_20_steps() -> None:
    """``W @ h``, ``U @ X[t]`` and their sum run 20 times before the reverse pass: 20 buffers
    each; ``tanh``'s result is carried to the next step, so it has none; ``h * h`` runs once."""
    rng = np.random.default_rng(4)
    args = rnn_args(rng, 20)
    sites = buffered(rnn, *args)
    assert sites == ["numpy.matmul", "numpy.matmul", "numpy.add", "numpy.multiply"]
    assert "numpy.tanh" in unbuffered(rnn, *args)
    rule, _, _ = check(rnn, *args)
    assert memory(rule).buffers == rnn_bytes(20)
    for _ in range(2):
        check(rnn, *rnn_args(rng, 20), rule=rule)
        assert memory(rule).buffers == rnn_bytes(20)


def test_buffers_grow_with_the_pending_runs_and_are_reused() -> None:
    """``x * k`` and its sine: one buffer each per iteration; a shorter loop later uses the
    first depths and keeps the others (no new memory on any warm call)."""
    x = np.linspace(-1.0, 2.0, 7)
    assert buffered(sines, x, 3) == ["numpy.multiply", "numpy.sin"]
    rule, _, _ = check(sines, x, 3)
    assert memory(rule).buffers == 2 * 3 * x.nbytes
    check(sines, x + 0.5, 6, rule=rule)
    assert memory(rule).buffers == 2 * 6 * x.nbytes
    for n, shift in ((3, 0.25), (6, -0.5), (5, 1.0)):
        check(sines, x + shift, n, rule=rule)
        assert memory(rule).buffers == 2 * 6 * x.nbytes


def test_a_value_of_the_last_run_read_after_the_loop() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal(6)
    assert {"numpy.sin", "numpy.multiply", "numpy.add"} <= set(buffered(until, x, 3))
    rule, _, _ = check(until, x, 3)
    for n in (5, 2, 4, 1):
        check(until, rng.standard_normal(6), n, rule=rule)


def test_the_rnn_with_more_steps_than_the_first_call() -> None:
    rng = np.random.default_rng(6)
    rule, _, _ = check(rnn, *rnn_args(rng, 3))
    assert memory(rule).buffers == rnn_bytes(3)
    check(rnn, *rnn_args(rng, 6), rule=rule)
    assert memory(rule).buffers == rnn_bytes(6)
    check(rnn, *rnn_args(rng, 3), rule=rule)


# --- 3. shapes that change between calls ----------------------------------------------------


def smooth(x: Array) -> float:
    return float(np.sum(np.exp(x * 0.5) * np.sin(x) - x**2))


def broadcast(A: Array, b: Array) -> float:
    return float(np.sum(np.sin(A + b) * (A - b)))


def test_a_longer_vector_then_the_first_length_again() -> None:
    rng = np.random.default_rng(7)
    rule, _, _ = check(smooth, rng.standard_normal(5))
    assert memory(rule).buffers > 0
    check(smooth, rng.standard_normal(7), rule=rule)
    check(smooth, rng.standard_normal(5), rule=rule)
    check(smooth, rng.standard_normal((2, 3)), rule=gibbous.build_rrule(smooth, np.ones((2, 3))))


def test_other_broadcasts_on_one_rule() -> None:
    """A rule is built for operands' ranks, not shapes: (3, 4) + (4,), then operands of other
    shapes whose result has that shape or another.  A buffer made for (3, 4) + (4,) must not
    take (3, 1) + (4,) nor (3, 4) + (1,) (the same result shape), nor (1, 4) + (4,) (``out=`` of
    (3, 4) would broadcast the smaller result, and the sum count it thrice)."""
    rng = np.random.default_rng(8)
    assert {"numpy.add", "numpy.sin", "numpy.subtract"} <= set(
        buffered(broadcast, np.ones((3, 4)), np.ones(4))
    )
    rule, _, _ = check(broadcast, rng.standard_normal((3, 4)), rng.standard_normal(4))
    for a, b in [
        ((3, 1), (4,)),  # the result's shape from other operand shapes
        ((3, 4), (1,)),
        ((1, 4), (4,)),  # a smaller result
        ((1, 1), (4,)),
        ((3, 4), (4,)),  # the first shapes again
        ((5, 2), (2,)),
    ]:
        check(broadcast, rng.standard_normal(a), rng.standard_normal(b), rule=rule)


def test_two_matrices_broadcast_as_rows_and_columns() -> None:
    rng = np.random.default_rng(9)
    rule, _, _ = check(broadcast, rng.standard_normal((3, 4)), rng.standard_normal((1, 4)))
    for a, b in [
        ((1, 4), (3, 4)),  # operands swapped: the same result shape
        ((3, 1), (1, 4)),  # both broadcast
        ((3, 4), (3, 1)),  # a column
        ((3, 4), (3, 4)),
        ((1, 4), (1, 4)),  # a smaller result
        ((3, 4), (1, 4)),  # the first shapes again
    ]:
        check(broadcast, rng.standard_normal(a), rng.standard_normal(b), rule=rule)


def test_a_smaller_operand_with_a_larger_buffer() -> None:
    """``x * c`` first with x of (3, 4), then x of (1, 4): ``out=`` of the (3, 4) buffer would
    broadcast the product silently; then ``cos`` of it with the first shape again."""
    rng = np.random.default_rng(10)

    def scaled(x: Array, c: Array) -> float:
        return float(np.sum(np.cos(x * c)))

    assert buffered(scaled, np.ones((3, 4)), np.ones((3, 4))) == ["numpy.multiply", "numpy.cos"]
    rule, _, _ = check(scaled, rng.standard_normal((3, 4)), rng.standard_normal((3, 4)))
    check(scaled, rng.standard_normal((1, 4)), rng.standard_normal((1, 4)), rule=rule)
    check(scaled, rng.standard_normal((1, 4)), rng.standard_normal((3, 4)), rule=rule)
    check(scaled, rng.standard_normal((3, 4)), rng.standard_normal((3, 1)), rule=rule)
    check(scaled, rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rule=rule)


# --- 4. escaping results: not buffered, and never changed later ---------------------------


def sine_of(x: Array) -> Array:
    return np.sin(x)


def through_a_returned_result(x: Array) -> float:
    return float(np.sum(sine_of(x) * x))


def stored_in_a_list(x: Array) -> float:
    zs = [np.sin(x)]
    return float(np.sum(zs[0] * 2.0))


def sliced(x: Array) -> float:
    z = x * 2.0
    return float(np.sum(z[1:]))


def helper(z: Array) -> float:
    return float(np.sum(z * z))


def through_a_user_function(x: Array) -> float:
    z = np.sin(x)
    return helper(z) + 1.0


def through_cumsum(x: Array) -> float:
    z = np.sin(x)
    return float(np.sum(np.cumsum(z) ** 2))


def carried(x: Array) -> float:
    s = x
    for _ in range(3):
        s = np.sin(s) + 0.1
    return float(np.sum(s * s))


@pytest.mark.parametrize(
    "f, site",
    [
        (sine_of, "numpy.sin"),
        (stored_in_a_list, "numpy.sin"),
        (sliced, "operator.mul"),
        (through_a_user_function, "numpy.sin"),
        (through_cumsum, "numpy.sin"),
        (carried, "operator.add"),
    ],
    ids=["returned", "list", "sliced", "user_function", "cumsum", "loop_carried"],
)
def test_an_escaping_result_is_not_buffered(f: t.Any, site: str) -> None:
    x = np.linspace(-1.0, 1.0, 5)
    assert site in unbuffered(f, x)
    ufunc = {"operator.mul": "numpy.multiply", "operator.add": "numpy.add"}.get(site, site)
    assert ufunc not in buffered(f, x)


@pytest.mark.parametrize(
    "f",
    [
        through_a_returned_result,
        stored_in_a_list,
        sliced,
        through_a_user_function,
        through_cumsum,
        carried,
    ],
)
def test_escaping_results_give_right_gradients_call_after_call(f: t.Any) -> None:
    rng = np.random.default_rng(10)
    rule, _, _ = check(f, rng.standard_normal(6))
    for _ in range(2):
        check(f, rng.standard_normal(6), rule=rule)


def returns_an_array(x: Array) -> Array:
    z = np.sin(x) * 2.0  # buffered: read by ``+`` only
    return z + 1.0  # returned: not buffered


def returns_a_view(x: Array) -> Array:
    z = np.sin(x) * 2.0  # a view of it returned: the product is not buffered
    return z[1:]


@pytest.mark.parametrize(
    "f, sites, site, value, derivative",
    [
        (
            returns_an_array,
            ["numpy.sin", "numpy.multiply"],
            "operator.add",
            lambda x: np.sin(x) * 2.0 + 1.0,
            lambda x: 2.0 * np.cos(x),
        ),
        (
            returns_a_view,
            ["numpy.sin"],
            "operator.mul",
            lambda x: np.sin(x[1:]) * 2.0,
            lambda x: np.r_[0.0, 2.0 * np.cos(x[1:])],
        ),
    ],
    ids=["array", "view"],
)
def test_a_returned_array_is_not_changed_by_the_next_call(
    f: t.Any, sites: list[str], site: str, value: t.Any, derivative: t.Any
) -> None:
    """The array a forward pass hands back is the caller's: the next call (other values, the
    same shapes, so every buffer is reused) leaves it alone, and each pullback gives its own
    call's gradient (the cotangent of an array result goes into its fdata)."""
    rng = np.random.default_rng(11)
    x1, x2 = rng.standard_normal(5), rng.standard_normal(5)
    assert buffered(f, x1) == sites
    assert site in unbuffered(f, x1)
    rule = gibbous.build_rrule(f, x1)
    cd = CoDual(f, NO_TANGENT)
    for _ in range(2):  # cold, then warm
        d1, d2 = np.zeros(5), np.zeros(5)
        y1, pb1 = rule(cd, CoDual(x1, d1))
        y1.fdata[...] += 1.0
        pb1(NO_TANGENT)
        first = np.copy(y1.primal)
        y2, pb2 = rule(cd, CoDual(x2, d2))
        y2.fdata[...] += 1.0
        pb2(NO_TANGENT)
        assert np.array_equal(y1.primal, first)
        assert np.allclose(first, value(x1), rtol=1e-14)
        assert np.allclose(y2.primal, value(x2), rtol=1e-14)
        assert not np.shares_memory(y1.primal, y2.primal)
        assert np.allclose(d1, derivative(x1), rtol=1e-14)
        assert np.allclose(d2, derivative(x2), rtol=1e-14)


# --- 5. recursion, nested calls, pending passes, exceptions ---------------------------------


def recursive(x: Array, n: int) -> float:
    if n == 0:
        return float(np.sum(np.sin(x) * x))
    return float(np.sum(np.cos(x) * 0.5)) + recursive(x * 1.1, n - 1)


def inner(x: Array, k: float) -> float:
    return float(np.sum(np.sin(x * k) * x))


def nested_in_a_loop(x: Array) -> float:
    s = 0.0
    for k in range(4):
        s += inner(x, k + 1.0)
    return s


def test_recursion_three_deep() -> None:
    rng = np.random.default_rng(12)
    rule, _, _ = check(recursive, rng.standard_normal(4), 3)
    for n in (3, 2, 3, 0, 3):
        check(recursive, rng.standard_normal(4), n, rule=rule)


def test_a_derived_call_in_a_loop() -> None:
    """``inner`` runs four times before its pullbacks: its sites' buffers at four depths."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal(5)
    assert buffered(inner, x, 1.0) == ["numpy.multiply", "numpy.sin", "numpy.multiply"]
    rule, _, _ = check(nested_in_a_loop, x)
    held = memory(rule).buffers
    assert held >= 4 * 3 * x.nbytes
    for _ in range(2):
        check(nested_in_a_loop, rng.standard_normal(5), rule=rule)
        assert memory(rule).buffers == held


def test_pending_forward_passes_pop_last_in_first_out() -> None:
    """Two forward passes before either pullback: the second must not write into the first's
    buffers (its reverse pass reads them after the second's)."""
    rng = np.random.default_rng(14)
    x1, x2 = rng.standard_normal(6), rng.standard_normal(6)
    rule = gibbous.build_rrule(trig, x1)
    f = CoDual(trig, NO_TANGENT)
    for _ in range(2):
        d1, d2 = np.zeros(6), np.zeros(6)
        y1, pb1 = rule(f, CoDual(x1, d1))
        y2, pb2 = rule(f, CoDual(x2, d2))
        pb2(1.0)
        pb1(1.0)
        fd_at(trig, (x1,), y1.primal, (None, d1))
        fd_at(trig, (x2,), y2.primal, (None, d2))


def test_a_copy_of_a_rule_has_buffers_of_its_own() -> None:
    """``copy.copy(rule)`` is another instance: a whole call of the copy between a forward
    pass of the original and its pullback must not touch what that pullback reads."""
    rng = np.random.default_rng(18)
    x1, x2 = rng.standard_normal(6), rng.standard_normal(6)
    rule = gibbous.build_rrule(trig, x1)
    other = copy.copy(rule)
    check(trig, x2, rule=other)
    d1 = np.zeros(6)
    y1, pb1 = rule(CoDual(trig, NO_TANGENT), CoDual(x1, d1))
    check(trig, rng.standard_normal(6), rule=other)
    pb1(1.0)
    fd_at(trig, (x1,), y1.primal, (None, d1))


def raises_late(x: Array, c: float) -> float:
    s = 0.0
    for k in range(4):
        z = np.sin(x * (k + 1.0)) * np.cos(x)
        s += float(np.sum(z))
        if c > 0 and k == 2:  # after three runs of every site
            raise ValueError("late")
    return s


def inner_raising(x: Array, k: float, c: float) -> float:
    z = np.sin(x * k) * np.cos(x)
    if c > 0 and k > 2.5:  # the third pending call, after its sites ran
        raise ValueError("late")
    return float(np.sum(z))


def raises_in_a_nested_call(x: Array, c: float) -> float:
    s = 0.0
    for k in range(4):
        s += inner_raising(x, k + 1.0, c)
    return s


def raises_at_the_bottom(x: Array, n: int, c: float) -> float:
    z = np.sin(x) * x
    if n == 0:
        if c > 0:
            raise ValueError("late")
        return float(np.sum(z))
    return float(np.sum(z)) + raises_at_the_bottom(x * 0.5, n - 1, c)


@pytest.mark.parametrize(
    "f, rest",
    [(raises_late, ()), (raises_in_a_nested_call, ()), (raises_at_the_bottom, (3,))],
    ids=["loop", "nested_call", "recursion"],
)
def test_an_exception_half_way_leaves_the_next_call_right(
    f: t.Any, rest: tuple[t.Any, ...]
) -> None:
    """A forward pass that raises after buffered sites ran at several depths, twenty times:
    the rule is reset, the next call is right and the buffers held do not grow."""
    rng = np.random.default_rng(15)
    rule, _, _ = check(f, rng.standard_normal(5), *rest, -1.0)
    held = memory(rule).buffers
    assert held > 0
    for i in range(20):
        with pytest.raises(ValueError, match="late"):
            gibbous.value_and_gradient(rule, f, rng.standard_normal(5), *rest, 1.0)
        assert memory(rule).buffers <= held, i
        if i % 5 == 4:
            check(f, rng.standard_normal(5), *rest, -1.0, rule=rule)
            assert memory(rule).buffers == held


def test_buffers_of_the_loop_raising() -> None:
    x = np.zeros(5)
    assert len(buffered(raises_late, x, -1.0)) == 4
    rule, _, _ = check(raises_late, x, -1.0)
    assert memory(rule).buffers == 4 * 4 * x.nbytes


def refuses_early(z: Array, c: float) -> float:
    if c > 0:
        raise ValueError("early")  # before any differentiable work: a caller may go on
    return float(np.sum(np.cos(z) * z))


def refuses_late(z: Array, c: float) -> float:
    w = np.cos(z) * z
    if c > 0:
        raise ValueError("late")  # after its sites ran: gibbous refuses the caller going on
    return float(np.sum(w))


def catches(x: Array, c: float) -> float:
    s = 0.0
    for k in range(3):
        z = np.sin(x * (k + 1.0))
        try:
            s += refuses_early(z, c)
        except ValueError:
            s += float(np.sum(z * 0.5))
    return s


def catches_late(x: Array, c: float) -> float:
    s = 0.0
    for k in range(3):
        z = np.sin(x * (k + 1.0))
        try:
            s += refuses_late(z, c)
        except ValueError:
            s += float(np.sum(z * 0.5))
    return s


def test_an_exception_caught_by_the_function_itself() -> None:
    """Raised and caught inside the differentiated function, the two paths alternating on
    one rule: right every call, and no buffers piled up."""
    rng = np.random.default_rng(19)
    rule, _, _ = check(catches, rng.standard_normal(5), 1.0)
    for c in (-1.0, 1.0, -1.0, 1.0):
        check(catches, rng.standard_normal(5), c, rule=rule)
    held = memory(rule).buffers
    for c in (1.0, -1.0):
        check(catches, rng.standard_normal(5), c, rule=rule)
        assert memory(rule).buffers == held


def test_a_refused_partial_call_leaves_the_next_call_right() -> None:
    """``PartialCallError`` (a callee raised after its sites ran and the caller went on),
    twenty times, then a call that does not raise: right, with the buffers of one pass."""
    rng = np.random.default_rng(20)
    rule, _, _ = check(catches_late, rng.standard_normal(5), -1.0)
    held = memory(rule).buffers
    for _ in range(20):
        with pytest.raises(PartialCallError):
            gibbous.value_and_gradient(rule, catches_late, rng.standard_normal(5), 1.0)
    check(catches_late, rng.standard_normal(5), -1.0, rule=rule)
    assert memory(rule).buffers == held


def test_abandoned_pullbacks_do_not_pile_up_buffers() -> None:
    """A forward pass whose pullback is never called, twenty times: the next call is right,
    and the buffers held stay those of one pass."""
    rng = np.random.default_rng(16)
    x = rng.standard_normal(6)
    rule, _, _ = check(trig, x)
    held = memory(rule).buffers
    f = CoDual(trig, NO_TANGENT)
    for _ in range(20):
        rule(f, CoDual(rng.standard_normal(6), np.zeros(6)))
    check(trig, rng.standard_normal(6), rule=rule)
    assert memory(rule).buffers == held


# --- 6. threads ------------------------------------------------------------------------------


def test_threads_sharing_a_rule_get_their_own_buffers(contention: None) -> None:  # noqa: F811
    rng = np.random.default_rng(17)
    cases = [rnn_args(rng, 8) for _ in range(8)]
    rule = gibbous.build_rrule(rnn, *cases[0])
    want = [gibbous.value_and_gradient(gibbous.build_rrule(rnn, *a), rnn, *a) for a in cases]
    for args, (y, grads) in zip(cases[:2], want):
        fd_at(rnn, args, y, grads)
    wrong: list[int] = []

    def work(k: int) -> None:
        for i in range(6):
            j = (k + 4 * i) % len(cases)
            y, grads = gibbous.value_and_gradient(rule, rnn, *(np.copy(a) for a in cases[j]))
            y0, grads0 = want[j]
            pairs = [(y, y0)] + list(zip(grads[1:], grads0[1:]))
            if not all(np.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in pairs):
                wrong.append(j)

    _run_threads(work, 4)
    assert not wrong, wrong


# --- 7. memory(rule) --------------------------------------------------------------------


def test_memory_counts_the_buffers_of_a_straight_line_function() -> None:
    """``np.sum(np.sin(x) * np.cos(x))``: sin, cos and the product buffered, x's bytes each;
    five temporaries of the reverse pass in the sites' scratch (the sum's cotangent spread,
    the product's two operands' and the two slopes added into x's fdata); nothing before the
    first call, the same after a warm one."""
    x = np.linspace(0.0, 1.0, 37)
    rule = gibbous.build_rrule(trig, x)
    assert memory(rule).buffers == 0
    gibbous.value_and_gradient(rule, trig, x)
    report = memory(rule)
    assert report.buffers == 3 * x.nbytes
    assert report.scratch == 5 * x.nbytes
    assert report.tape == 0 and report.states == 0
    assert report.total == report.buffers + report.scratch
    assert f"{3 * x.nbytes} in buffers of array sites, {5 * x.nbytes} in their scratch" in str(
        report
    )
    gibbous.value_and_gradient(rule, trig, x * 2.0)
    assert memory(rule) == report
    # another shape: the buffers are the new ones', the old ones dropped
    y = np.linspace(0.0, 1.0, 11)
    gibbous.value_and_gradient(rule, trig, y)
    assert memory(rule).buffers == 3 * y.nbytes
    assert memory(rule).scratch == 5 * y.nbytes


# --- 8. which sizes are buffered --------------------------------------------------------------


def test_buffers_are_kept_only_when_asked_for() -> None:
    """``value_and_gradient`` computes as the primal does (buffers kept since the last call
    lost to memory ``malloc`` had just freed); ``prepare_gradient`` asks for buffers, so that a
    warm call allocates nothing.  The rule switches between calls; the buffers it made stay
    for the next call that keeps them (``reset`` frees them)."""
    buffers.MODE.keep = False
    x = np.linspace(0.0, 1.0, 37)
    rule, _, _ = check(trig, x)
    check(trig, x * 2.0, rule=rule)
    assert memory(rule).buffers == 0 and memory(rule).scratch == 0
    buffers.MODE.keep = True
    check(trig, x * 3.0, rule=rule)
    assert memory(rule).buffers == 3 * x.nbytes  # asked: kept from now on
    kept = [b.arrays[0] for b in site_buffers(rule) if b.arrays]
    assert len(kept) == 3
    buffers.MODE.keep = False
    check(trig, x * 4.0, rule=rule)  # not asked: not used, not freed
    assert memory(rule).buffers == 3 * x.nbytes
    buffers.MODE.keep = True
    check(trig, x * 5.0, rule=rule)  # asked again: the same buffers
    now = [b.arrays[0] for b in site_buffers(rule) if b.arrays]
    assert all(a is k for a, k in zip(now, kept))
    t.cast(t.Any, rule).reset()
    assert memory(rule).buffers == 0
    buffers.MODE.keep = False
    prepared = gibbous.prepare_gradient(trig, x)
    prepared(x)
    assert not buffers.MODE.keep  # set for its calls only
    assert memory(t.cast(t.Any, prepared).rule).buffers == 3 * x.nbytes
    y, grads = gibbous.value_and_gradient(t.cast(t.Any, prepared).rule, trig, x * 5.0)
    fd_at(trig, (x * 5.0,), y, grads)


def test_pending_calls_keep_their_kind() -> None:
    """A forward call pending its pullback keeps the kind it was made with: the switch waits
    until nothing is pending."""
    buffers.MODE.keep = True
    x = np.linspace(0.0, 1.0, 9)
    rule = gibbous.build_rrule(trig, x)
    fdata = np.zeros_like(x)
    y1, pb1 = rule(CoDual(trig, NO_TANGENT), CoDual(x, fdata))
    buffers.MODE.keep = False
    y2, pb2 = rule(CoDual(trig, NO_TANGENT), CoDual(x * 2.0, np.zeros_like(x)))
    pb2(1.0)
    pb1(1.0)
    want = np.cos(2 * x) * 1.0  # d/dx sum(sin x cos x) = cos 2x
    np.testing.assert_allclose(fdata, want, rtol=1e-12, atol=1e-14)


def residual(x: Array, y: Array) -> float:
    r = x - y  # used twice: its cotangent is added into fdata, not passed as a value
    return float(np.sum(np.sin(r) * r))


def test_a_result_used_twice_has_its_fdata_in_the_site_buffers() -> None:
    """The fdata of a buffered result (where its cotangent is added up) is a buffer of the
    site's too, zeroed at every run: a stale one would add the last call's cotangent in."""
    rng = np.random.default_rng(12)
    x, y = rng.standard_normal(9), rng.standard_normal(9)
    assert "buffers_zeros(ad.buffers_" in str(code_ir(residual, x, y, stage="forward"))
    rule, _, _ = check(residual, x, y)
    held = memory(rule).buffers
    assert held == 4 * x.nbytes  # x - y, its fdata, sin, the product
    for _ in range(3):
        check(residual, rng.standard_normal(9), rng.standard_normal(9), rule=rule)
        assert memory(rule).buffers == held
    prepared = gibbous.prepare_gradient(residual, x, y)
    assert measure(lambda mark: prepared(x, y)).allocated == 0

