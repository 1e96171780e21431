"""Whole user functions with Python idioms that go through hand-written rules: reductions of
lists and tuples, ``getattr`` with a default, the ``random`` module.  Each gradient is taken
with ``gibbous.grad`` and with ``value_and_gradient(build_rrule(...))``, and checked against
central finite differences."""

from __future__ import annotations

import random
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import build_rrule
from gibbous.ir import runtime
from gibbous.tangents.model import MutableTangent, NoTangent
from tests.ad.conftest import check


def both(f: t.Callable[..., t.Any], *args: t.Any, rng: np.random.Generator) -> tuple[t.Any, ...]:
    """The gradients of ``f`` at ``args`` by ``value_and_gradient`` (checked against finite
    differences) and by ``gibbous.grad`` (checked to agree)."""
    _, _, grads = check(f, *args, rng=rng)
    by_grad = gibbous.grad(f, argnums=tuple(range(len(args))))(*args)
    for a, b in zip(grads[1:], by_grad):
        if isinstance(a, MutableTangent):  # a generator's: nothing in it
            assert a.fields == b.fields == {"gauss_next": NoTangent()}
            continue
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return t.cast(tuple[t.Any, ...], grads[1:])


# --------------------------------------------------------------------------------------------
# Reductions of lists and tuples


def sum_of_list(a: float, b: float) -> float:
    return float(np.sum([a * a, b]))


def rows_of_a_tuple(x: np.ndarray, y: np.ndarray) -> float:
    total = np.sum((x, y * y), axis=0)
    return float(np.mean([total, x]) + np.var((x[0], y[1], x[2])) + np.std([x, y]))


def norms_and_extremes(a: float, b: float, x: np.ndarray) -> float:
    nested = [[a, b], [b * a, 2.0]]
    return float(
        np.linalg.norm([a, b])
        + np.max(nested)
        + np.min((a, b))
        + np.prod([a, b, 1.5])
        + np.average([a, b], weights=[b, 1.0])
        + np.sum(np.cumsum([x, 2.0 * x], axis=0))
        + np.linalg.norm(nested, "fro")
    )


def test_sum_of_a_list(rng: np.random.Generator) -> None:
    assert both(sum_of_list, 1.5, -0.5, rng=rng) == (3.0, 1.0)


def test_reductions_of_lists_and_tuples(rng: np.random.Generator) -> None:
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    both(rows_of_a_tuple, x, y, rng=rng)
    both(norms_and_extremes, 0.7, 1.3, rng.standard_normal(2), rng=rng)


def running_total(xs: list[float]) -> float:
    out = 0.0
    for k in range(1, len(xs)):
        out += float(np.sum(xs[:k])) * xs[k]
    return out


def test_a_list_argument_gets_its_gradient_in_its_tangent(rng: np.random.Generator) -> None:
    (g,) = both(running_total, [0.5, -1.0, 2.0, 0.25], rng=rng)
    assert isinstance(g, list) and len(g) == 4


# --------------------------------------------------------------------------------------------
# getattr with a default


class Layer:
    def __init__(self, w: np.ndarray) -> None:
        self.w = w


def scaled(layer: Layer, x: np.ndarray, s: float) -> float:
    w = getattr(layer, "w", x)  # there: the default gets nothing
    b = getattr(layer, "bias", s * x)  # missing: the default, with its gradient
    c = getattr(layer, "scale", s)  # a float default
    return float(np.sum(w * x + b * b)) * c


def test_getattr_with_a_default(rng: np.random.Generator) -> None:
    layer, x, s = Layer(rng.standard_normal(3)), rng.standard_normal(3), 0.5
    _, _, grads = check(scaled, layer, x, s, rng=rng)
    total = np.sum(layer.w * x + s * s * x * x)
    np.testing.assert_allclose(grads[3], total + s * np.sum(2 * s * x * x))
    np.testing.assert_allclose(gibbous.grad(scaled, argnums=(1, 2))(layer, x, s)[1], grads[3])


# --------------------------------------------------------------------------------------------
# The random module: draws along the path; each function seeds its generator, so that every
# call (the finite differences') draws the same numbers


def noisy(mu: float, sigma: float, xs: list[float]) -> float:
    random.seed(7)
    z = random.gauss(mu, sigma) + random.uniform(mu, 2.0) * random.normalvariate(0.0, sigma)
    picked = random.choice(xs)
    random.shuffle(xs)
    return z * picked + xs[0] * random.random() + random.randint(0, 3)


def with_a_generator(mu: float, rng: random.Random) -> float:
    rng.seed(11)
    return rng.uniform(mu, 3.0) * rng.expovariate(mu) + rng.lognormvariate(mu, 0.5)


def test_random_draws(rng: np.random.Generator) -> None:
    both(noisy, 0.5, 1.5, [0.25, -1.0, 2.0, 0.75], rng=rng)
    both(with_a_generator, 0.8, random.Random(), rng=rng)


def test_a_gauss_draw_is_mu_plus_sigma_z(rng: np.random.Generator) -> None:
    def draw(mu: float, sigma: float) -> float:
        random.seed(3)
        return random.gauss(mu, sigma)

    random.seed(3)
    z = random.gauss(0.0, 1.0)
    assert both(draw, 0.5, 2.0, rng=rng) == pytest.approx((1.0, z))


# --------------------------------------------------------------------------------------------
# locals(): a dict of the locals bound at the call (runtime.make_locals, make_dict's rule)


def uses_locals(x: float, flag: bool) -> float:
    if flag:
        y = x * x
    d = locals()
    return float(d["x"] * 2.0 + d.get("y", 1.0) * x)


@pytest.mark.parametrize("flag", [True, False])
def test_locals_as_a_dict_of_the_bound_locals(flag: bool, rng: np.random.Generator) -> None:
    _, _, grads = check(uses_locals, 1.5, flag, rng=rng)
    assert grads[1] == pytest.approx(2.0 + (3 * 1.5**2 if flag else 1.0))


def _names_set_in_with_blocks(x: np.ndarray) -> t.Any:
    # After a ``with`` block a name it sets may be unbound (``__exit__`` may swallow an
    # exception); read in the next one, a guarded ``check_bound``, on primals and CoDuals.
    with np.errstate(invalid="ignore"):
        a = x * 2.0
        b = x * 3.0
    with np.errstate(invalid="ignore"):
        r = np.sum(a / b * x**2)
    return r


def _name_set_in_one_branch(x: np.ndarray, task: int = 0) -> t.Any:
    if task <= 0:  # (scipy.interpolate.splrep's _curfit_cache)
        cache = {}
    try:
        cache["t"] = x * 2.0
    except KeyError:
        pass
    return np.sum(cache["t"] * x)


@pytest.mark.parametrize("f", [_names_set_in_with_blocks, _name_set_in_one_branch])
def test_names_maybe_unbound_read_where_a_handler_is(
    f: t.Callable[..., t.Any], rng: np.random.Generator
) -> None:
    both(f, rng.uniform(0.5, 1.5, 5), rng=rng)
