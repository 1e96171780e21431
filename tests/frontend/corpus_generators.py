"""Generators in the style of real code: a generator of layer parameters, mini-batches,
running sums, a generator expression handed to a function of the user's, ``next`` with a
default, generators that stop early or hold a ``try``/``finally``.  Part of the frontend corpus
(``corpus.CASES``); differentiated, each step of a generator is a call of its resume function
(``gibbous.ir.runtime.GeneratorFrame``)."""

from __future__ import annotations

import contextlib
import math

import numpy as np

from tests.frontend.samples import collector, vec

CASES, sample = collector()

_rng = np.random.default_rng(7)
LAYERS = [
    (_rng.standard_normal((4, 3)), _rng.standard_normal(4)),
    (_rng.standard_normal((2, 4)), _rng.standard_normal(2)),
]


def unpack_layers(params):
    for W, b in params:
        yield W, b


@sample(LAYERS, vec(0.5, -1.0, 2.0))
def mlp_over_generated_layers(params, x):
    h = x
    for W, b in unpack_layers(params):
        h = np.tanh(W @ h + b)
    return float(np.sum(h * h))


def batches(x, size):
    for start in range(0, len(x), size):
        yield x[start : start + size]


@sample(vec(0.5, 1.5, -2.0, 3.0, 0.25), 2)
def mean_of_batch_norms(x, size):
    total = 0.0
    n = 0
    for batch in batches(x, size):
        total += float(np.sqrt(np.sum(batch * batch)))
        n += 1
    return total / n


def running_sums(xs):
    s = 0.0
    for x in xs:
        s += x
        yield s


@sample([1.5, -0.5, 2.0, 0.25])
def sum_of_running_sums(xs):
    return sum(running_sums(xs))


def weighted_total(values):
    t = 0.0
    k = 1
    for v in values:  # (enumerate() of a generator is not differentiated: docs/frontend.md)
        t += k * v
        k += 1
    return t


@sample(vec(0.5, 2.0, -1.0))
def generator_expression_to_own_function(x):
    return weighted_total(math.exp(v) for v in x)


@sample([3.0, -1.0, 2.0])
@sample([-3.0, -1.0])
def first_positive_or_default(xs):
    return next((x * x for x in xs if x > 0), 0.5)


def take_while_below(xs, limit):
    for x in xs:
        if x >= limit:
            return
        yield x


@sample(vec(0.5, 1.0, 4.0, 0.25), 3.0)
def sum_until_limit(x, limit):
    s = 0.0
    for v in take_while_below(x, limit):
        s = s + v * v
    return s


def pairs(a, b):
    for u in a:
        for v in b:
            yield u * v


@sample(vec(1.0, 2.0), vec(0.5, -1.5, 3.0))
def nested_loops_in_a_generator(a, b):
    return max(pairs(a, b)) + min(pairs(a, b))


def scaled(xs, factor):
    try:
        for x in xs:
            yield x * factor
    finally:
        factor = 0.0


@sample([1.0, 2.0, 3.0], 1.5)
def generator_with_finally(xs, factor):
    return sum(scaled(xs, factor))


@sample(vec(0.1, 0.2, 0.3))
def stop_after_two(x):
    gen = (v * 10.0 for v in x)
    first = next(gen)
    second = next(gen)
    return first * second


def composed(xs):
    for v in running_sums(xs):
        yield math.sin(v)


@sample([0.5, 1.0, -0.25])
def generator_of_a_generator(xs):
    return sum(composed(xs))


def lorenz_states(state, dt, steps):
    x, y, z = state
    for _ in range(steps):
        dx = 10.0 * (y - x)
        dy = x * (28.0 - z) - y
        dz = x * y - 8.0 / 3.0 * z
        x, y, z = x + dt * dx, y + dt * dy, z + dt * dz
        yield x, y, z


@sample((1.0, 1.0, 1.0), 0.01, 20)
def lorenz_final_energy(state, dt, steps):
    last = state
    for last in lorenz_states(state, dt, steps):
        pass
    return last[0] ** 2 + last[1] ** 2 + last[2] ** 2


@contextlib.contextmanager
def _scaled(x, s):
    y = x * s
    try:
        yield y
    finally:
        pass


@sample(vec(1.0, -2.0, 0.5), 3.0)
def contextmanager_yielding_a_value(x, s):
    with _scaled(x, s) as y:
        z = float(np.sum(y * y))
    return z
