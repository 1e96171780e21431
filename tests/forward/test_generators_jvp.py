"""Forward mode through generators (``gibbous.forward.frames``): generator functions
stepped by ``for`` loops and ``next``, stopped half-way and resumed, drained by ``sum`` and
``max``, made over cells with tangents, generator expressions; against central finite
differences.  What it cannot follow is refused by name."""

from __future__ import annotations

import subprocess
import sys
import typing as t

import numpy as np
import pytest

from gibbous import build_hvp
from gibbous.forward import ForwardModeError, build_frule, jvp
from tests.forward.test_closures_jvp import check

RNG = np.random.default_rng(43)


def running(x: np.ndarray) -> t.Iterator[float]:
    s = 0.0
    for v in x:
        s = s + np.sin(v) * v
        yield s


def sum_of_running(x: np.ndarray) -> float:
    t_ = 0.0
    for s in running(x):
        t_ += s * s
    return t_


def batches(x: np.ndarray, size: int) -> t.Iterator[np.ndarray]:
    for start in range(0, len(x), size):
        yield x[start : start + size]


def batch_norms(x: np.ndarray) -> float:
    return float(sum(np.sqrt(np.sum(b * b)) for b in batches(x, 2)))


def half_then_rest(x: np.ndarray) -> float:
    gen = running(x)
    first = next(gen)
    second = next(gen)
    rest = 0.0
    for s in gen:  # the same generator, resumed where next() left it
        rest += s
    return first * second + rest


def with_default(x: np.ndarray) -> float:
    gen = running(x[:1])
    a = next(gen)
    b = next(gen, 2.5 * x[1])  # exhausted: the default, with its tangent
    return a * b


def drained(x: np.ndarray, w: float) -> float:
    return max(running(x)) * w + sum(running(x * w))


def made_over_cells(x: np.ndarray, w: float) -> float:
    scale = w * w

    def scaled(n: int) -> t.Iterator[float]:
        for i in range(n):
            yield scale * x[i]  # read through the closure's cells

    total = 0.0
    for v in scaled(3):
        total += v
    return total


def generator_expressions(x: np.ndarray, w: float) -> float:
    a = sum(v * w for v in x)  # run eagerly, over a cell with a tangent
    b = max(np.exp(v) for v in x)
    return float(a * b)


def state_tuples(state: np.ndarray, dt: float) -> t.Iterator[tuple[float, float]]:
    p, q = state[0], state[1]
    for _ in range(5):
        p, q = p + dt * q, q - dt * np.sin(p)
        yield p, q


def pendulum(state: np.ndarray, dt: float) -> float:
    last = (0.0, 0.0)
    for last in state_tuples(state, dt):
        pass
    return float(last[0] ** 2 + last[1])


def nested(x: np.ndarray) -> t.Iterator[float]:
    for s in running(x):  # a generator stepping another
        yield np.cos(s)


def generator_of_generator(x: np.ndarray) -> float:
    return float(sum(nested(x)))


X = np.array([0.3, -1.2, 0.8, 2.0, -0.4])


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (sum_of_running, (X,)),
        (batch_norms, (X,)),
        (half_then_rest, (X,)),
        (with_default, (X,)),
        (drained, (X, 0.7)),
        (made_over_cells, (X, 1.3)),
        (generator_expressions, (X, 0.6)),
        (pendulum, (np.array([0.4, -0.2]), 0.1)),
        (generator_of_generator, (X,)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_generators_match_central_differences(f: t.Callable[..., t.Any], args: t.Any) -> None:
    check(f, *args)


def stop_iteration_escapes(x: np.ndarray) -> float:
    gen = running(x[:1])
    next(gen)
    return float(next(gen))  # raises StopIteration, as the primal does


def test_an_exhausted_generator_raises_as_the_primal_does() -> None:
    rule = build_frule(stop_iteration_escapes, X)
    with pytest.raises(StopIteration):
        jvp(rule, stop_iteration_escapes, (X,), (np.ones(5),))


def fills(z: np.ndarray, x: np.ndarray) -> t.Iterator[int]:
    for i in range(len(x)):
        z[i] = x[i] * x[i]  # a write into an array the generator was given
        yield i


def written_by_a_generator(x: np.ndarray) -> float:
    z = np.zeros(5)
    for _ in fills(z, x):
        pass
    return float(np.sum(z * x))


def test_a_generator_writing_into_its_argument() -> None:
    # (the write is seen where the generator is called: z gets a tangent of its own)
    check(written_by_a_generator, X)


def written_argument(z: np.ndarray, x: np.ndarray) -> float:
    for _ in fills(z, x):
        pass
    return float(np.sum(z * x))


def test_a_generator_writing_into_an_argument_of_the_rule() -> None:
    z, dz = np.zeros(5), RNG.standard_normal(5)
    dx = RNG.standard_normal(5)
    kept = dz.copy()
    rule = build_frule(written_argument, z, X)
    y, dy = jvp(rule, written_argument, (z.copy(), X), (dz, dx))
    np.testing.assert_array_equal(dz, kept)  # (the caller's tangent is not written)
    h = 1e-6
    fd = (written_argument(z + h * dz, X + h * dx) - written_argument(z - h * dz, X - h * dx))
    np.testing.assert_allclose(dy, fd / (2 * h), rtol=1e-6)


def test_hvp_refuses_a_generator_by_name() -> None:
    with pytest.raises(ForwardModeError, match="a generator in a Hessian-vector product"):
        build_hvp(sum_of_running, X)


def test_the_jvp_program_shows_the_steps() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gibbous", "ir", "tests.forward.test_generators_jvp:sum_of_running",
         "--args", "np.ones(3)", "--stage", "jvp"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "make_frame" in out.stdout
    assert "forward.steps.step" in out.stdout


def zipped(x: np.ndarray) -> float:
    total = 0.0
    for a, b in zip(running(x), running(x)):  # a library function iterating the frames
        total += a * b
    return total


def test_a_generator_iterated_by_a_library_function_is_refused_by_name() -> None:
    with pytest.raises(Exception, match="builtins.zip"):
        rule = build_frule(zipped, X)
        jvp(rule, zipped, (X,), (np.ones(5),))


def made_anew(x: float, k: int) -> float:
    a = x * 2.0

    def gen(n: int, m: int = k) -> t.Iterator[float]:  # a generator made on every call
        for i in range(n):
            yield a * i * m

    return float(sum(gen(3)) + sum(a * v for v in (x, x)))


def test_functions_made_anew_share_their_programs_and_read_their_own_defaults() -> None:
    import linecache

    rule = build_frule(made_anew, 1.5, 1)
    jvp(rule, made_anew, (1.0, 1), (1.0, None))
    programs = sum(name.startswith("<gibbous:") for name in linecache.cache)
    for k in range(1, 30):
        y, dy = jvp(rule, made_anew, (1.0 + k, k), (1.0, None))
        x = 1.0 + k
        assert (y, dy) == pytest.approx((6.0 * x * k + 4.0 * x * x, 6.0 * k + 8.0 * x))
    assert sum(name.startswith("<gibbous:") for name in linecache.cache) == programs


def nothing_yielded(x: np.ndarray) -> float:
    return float(sum(v for v in x if v > 100.0) + sum(running(x[:0])) + x[0] * x[1])


def test_consumers_of_generators_that_yield_nothing() -> None:
    check(nothing_yielded, X)
