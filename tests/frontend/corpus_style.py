"""Functions in the style of public numerical code: optimisation test functions, losses,
statistics, ODE integrators, written the way their authors write them (keyword arguments,
``*args`` wrappers, ``np.errstate``, a ``try`` around a fast path, helper generators).  Part of
the frontend corpus (``corpus.CASES``)."""

from __future__ import annotations

import functools
import math

import numpy as np

from tests.frontend.samples import collector, vec

CASES, sample = collector()


# --- optimisation test functions --------------------------------------------------------------


@sample(vec(1.2, -0.7))
def himmelblau(p):
    x, y = p
    return (x * x + y - 11.0) ** 2 + (x + y * y - 7.0) ** 2


@sample(vec(0.3, -1.1, 2.2, 0.05))
def rastrigin(x, A=10.0):
    return A * len(x) + float(np.sum(x**2 - A * np.cos(2 * np.pi * x)))


@sample(vec(0.4, -0.3, 0.9))
def ackley(x, a=20.0, b=0.2, c=2 * math.pi):
    n = x.size
    s1 = np.sum(x * x) / n
    s2 = np.sum(np.cos(c * x)) / n
    return -a * np.exp(-b * np.sqrt(s1)) - np.exp(s2) + a + math.e


@sample(vec(1.5, 0.25))
def beale(xy):
    x, y = xy
    terms = [(1.5, 1), (2.25, 2), (2.625, 3)]
    return sum((c - x + x * y**k) ** 2 for c, k in terms)


def _bound(fun, *args, **kwargs):
    """``scipy.optimize``'s way of binding extra arguments to an objective."""

    def wrapped(x, *more):
        return fun(x, *args, *more, **kwargs)

    return wrapped


def _quadratic(x, A, b, scale=1.0):
    return scale * (0.5 * x @ A @ x - b @ x)


@sample(vec(0.5, -1.0), np.array([[3.0, 0.5], [0.5, 2.0]]), vec(1.0, 2.0))
def objective_with_bound_arguments(x, A, b):
    return _bound(_quadratic, A, b, scale=2.0)(x)


# --- losses ------------------------------------------------------------------------------------


@sample(vec(0.5, -1.5, 2.0), np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.8]]), vec(1.0, 0.0))
def logistic_nll(w, X, y):
    z = X @ w
    return float(np.sum(np.logaddexp(0.0, z) - y * z))


@sample(np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]]), np.array([0, 1]))
def softmax_cross_entropy(logits, labels):
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -float(np.mean(log_probs[np.arange(len(labels)), labels]))


@sample(vec(0.3, -2.5, 1.2, 0.05), delta=1.0)
def huber(residuals, *, delta):
    a = np.abs(residuals)
    quadratic = np.minimum(a, delta)
    return float(np.sum(0.5 * quadratic**2 + delta * (a - quadratic)))


@sample(vec(1.0, 2.0, 0.5), vec(1.5, 1.0, 0.5))
def kl_divergence(p, q):
    p = p / np.sum(p)
    q = q / np.sum(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / q), 0.0)
    return float(np.sum(terms))


# --- statistics ------------------------------------------------------------------------------


@sample([2.0, 4.0, 4.5, 1.0, 3.5])
def welford_variance(xs):
    mean, m2 = 0.0, 0.0
    for n, x in enumerate(xs, start=1):
        delta = x - mean
        mean += delta / n
        m2 += delta * (x - mean)
    return m2 / (len(xs) - 1)


@sample(vec(0.3, -0.2, 1.4), 0.5, 1.2)
def gaussian_log_likelihood(x, mu, sigma):
    n = x.size
    return -0.5 * n * math.log(2 * math.pi * sigma**2) - float(np.sum((x - mu) ** 2)) / (
        2 * sigma**2
    )


def _chunks(x, size):
    for start in range(0, x.size, size):
        yield x[start : start + size]


@sample(vec(0.5, 1.5, -0.5, 2.0, 1.0, 0.25), 2)
def mean_of_chunk_maxima(x, size):
    return float(np.mean([np.max(c) for c in _chunks(x, size)]))


@sample(vec(1.0, 2.0, 3.0, 4.0), vec(2.0, 1.5, 3.5, 5.0))
def pearson_correlation(x, y):
    xm, ym = x - x.mean(), y - y.mean()
    try:
        return float(xm @ ym / math.sqrt((xm @ xm) * (ym @ ym)))
    except ZeroDivisionError:  # constant input
        return 0.0


# --- ODE integrators -------------------------------------------------------------------------


def _rk4_step(f, y, t, h, *args):
    k1 = f(y, t, *args)
    k2 = f(y + 0.5 * h * k1, t + 0.5 * h, *args)
    k3 = f(y + 0.5 * h * k2, t + 0.5 * h, *args)
    k4 = f(y + h * k3, t + h, *args)
    return y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def _damped_oscillator(y, t, omega, zeta):
    x, v = y
    return np.array([v, -2.0 * zeta * omega * v - omega**2 * x])


@sample(vec(1.0, 0.0), 1.5, 0.1, 0.05, 20)
def rk4_oscillator(y0, omega, zeta, h, steps):
    y, t = y0, 0.0
    for _ in range(steps):
        y = _rk4_step(_damped_oscillator, y, t, h, omega, zeta)
        t += h
    return float(y @ y)


@sample(vec(1.0, 0.5), vec(0.0, 0.8), 0.05, 30)
def leapfrog_kepler_energy(q, p, dt, steps):
    def force(q):
        r = math.sqrt(float(q @ q))
        return -q / r**3

    p = p + 0.5 * dt * force(q)
    for _ in range(steps - 1):
        q = q + dt * p
        p = p + dt * force(q)
    q = q + dt * p
    p = p + 0.5 * dt * force(q)
    return 0.5 * float(p @ p) - 1.0 / math.sqrt(float(q @ q))


@sample(vec(1.0, 1.0, 1.0), 0.01, 10, sigma=10.0, rho=28.0, beta=8.0 / 3.0)
def lorenz_euler(xyz, dt, steps, **params):
    sigma, rho, beta = params["sigma"], params["rho"], params["beta"]
    for _ in range(steps):
        x, y, z = xyz
        xyz = xyz + np.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z]) * dt
    return float(np.sum(xyz**2))


@functools.lru_cache(maxsize=None)
def _nodes(n):
    return tuple(np.polynomial.legendre.leggauss(n)[0])


@sample(0.3, 1.7)
def gauss_legendre_integral(a, b):
    """``integral_a^b exp(-t^2) dt`` with cached Gauss-Legendre nodes."""
    nodes = np.array(_nodes(5))
    weights = np.polynomial.legendre.leggauss(5)[1]
    mid, half = 0.5 * (a + b), 0.5 * (b - a)
    return half * float(np.sum(weights * np.exp(-((mid + half * nodes) ** 2))))


# --- the Python of libraries: imports in a body, super() --------------------------------------


@sample(vec(0.3, -0.8, 1.1))
def imports_in_the_body(x):
    import math as m  # (imported already: the module itself, a constant)
    from numpy import linalg, sin
    from numpy.linalg import norm

    if "gibbous_no_such_module" in __import__("sys").modules:
        import gibbous_no_such_module  # (never imported: never reached)

        return gibbous_no_such_module.f(x)
    return float(linalg.norm(x) + norm(sin(x))) + m.cos(float(x[0]))


class _Shape:
    def __init__(self, scale):
        self.scale = scale

    def __eq__(self, other):  # (the corpus compares the arguments' final states)
        return type(other) is type(self) and vars(other) == vars(self)

    def area(self, x):
        return self.scale * float(np.sum(x * x))


class _Square(_Shape):
    def __init__(self, scale):
        super().__init__(2.0 * scale)

    def area(self, x):
        return super().area(x) + float(np.sum(np.sin(x)))


class _Tiled(_Square):
    def area(self, x):
        return super(_Square, self).area(x) - super().area(x)  # (both forms, by the MRO)


@sample(vec(0.3, -0.8, 1.1), 1.5)
def methods_calling_super(x, s):
    return _Square(s).area(x) + _Tiled(s).area(x * 2.0)


# (the methods themselves, their object an argument: the frontend reads their super())
sample(_Square(1.5), vec(0.3, -0.8, 1.1))(_Square.area)
sample(_Tiled(0.5), vec(0.3, -0.8, 1.1))(_Tiled.area)


def _cast_all(*arrays):
    return (a * 2.0 for a in arrays)  # (SciPy's ``_ensure_dtype_cdsz`` returns one so)


@sample(vec(0.3, -0.8, 1.1))
def unpacks_a_generator(x):
    a, b = _cast_all(x, x**2)
    c, *d = _cast_all(x, x, x)
    return float(np.sum(a * b) + np.sum(c * d[1]))
