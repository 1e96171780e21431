"""Numerical code written the way scientists write it, each function with sample arguments.

Same format as ``corpus.py`` (whose ``CASES`` these cases are appended to, so every check of
the corpus runs on them): ``CASES`` lists ``(function, args, kwargs)``.  Several functions
change their arguments in place (partitions, stencils, Gauss-Seidel, the particle update); the
tests compare the final state of the arguments too.
"""

from __future__ import annotations

import dataclasses
import math
import typing as t

import numpy as np

from tests.frontend.samples import collector, vec

CASES, sample = collector()


_rng = np.random.default_rng(20240607)
LAYERS = [
    (_rng.standard_normal((5, 3)), _rng.standard_normal(5)),
    (_rng.standard_normal((4, 5)), _rng.standard_normal(4)),
    (_rng.standard_normal((2, 4)), _rng.standard_normal(2)),
]
SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]])  # diagonally dominant
POINTS = _rng.standard_normal((8, 2)) + np.repeat(vec(0, 3), 4)[:, None]
CENTROIDS = np.array([[0.0, 0.0], [3.0, 3.0], [-2.0, 1.0]])
GRID = np.outer(np.sin(np.linspace(0, np.pi, 6)), np.cos(np.linspace(0, 1, 5)))
ROD = np.exp(-((np.linspace(-1, 1, 9)) ** 2) * 8)


# --- ODEs ----------------------------------------------------------------------------------------


def lotka_volterra(t, y):
    """Predator-prey: d(prey)/dt = a prey - b prey pred, d(pred)/dt = -c pred + d prey pred."""
    a, b, c, d = 1.1, 0.4, 0.4, 0.1
    prey, pred = y[0], y[1]
    return np.array([a * prey - b * prey * pred, -c * pred + d * prey * pred])


def oscillator(t, y):
    return np.array([y[1], -y[0] - 0.1 * y[1] + 0.5 * math.cos(t)])


@sample(lotka_volterra, 0.0, vec(10.0, 5.0), 0.01)
@sample(oscillator, 1.0, vec(1.0, 0.0), 0.1)
def rk4_step(f, t, y, h):
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f(t + h / 2, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


@sample(oscillator, vec(1.0, 0.0), 0.0, 2.0, 20)
@sample(lotka_volterra, vec(10.0, 5.0), 0.0, 1.0, 0)
def rk4_integrate(f, y0, t0, t1, n):
    if n <= 0:
        raise ValueError("need at least one step")
    h = (t1 - t0) / n
    ts = [t0]
    ys = [y0]
    y = y0.copy()
    for i in range(n):
        y = rk4_step(f, t0 + i * h, y, h)
        ts.append(t0 + (i + 1) * h)
        ys.append(y)
    return np.array(ts), np.stack(ys)


# --- neural networks and statistics ----------------------------------------------------------


@sample(LAYERS, vec(0.5, -1.0, 2.0))
def mlp_forward(layers, x):
    h = x
    for i, (W, b) in enumerate(layers):
        z = W @ h + b
        if i < len(layers) - 1:
            h = np.tanh(z)
        else:
            h = z
    return h


@sample(vec(1.0, 2.0, 3.0))
@sample(vec(1000.0, 1001.0, 999.0))  # naive exp would overflow
def softmax(z):
    shifted = z - np.max(z)
    e = np.exp(shifted)
    return e / e.sum()


@sample(vec(1.0, 2.0, 3.0))
@sample(vec(-1000.0, -1000.5))
def logsumexp(z):
    m = z.max()
    if not np.isfinite(m):
        return m
    return m + math.log(np.sum(np.exp(z - m)))


@sample([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
@sample([1.0])
def welford(xs):
    """Running mean and sample variance in one pass."""
    n, mean, m2 = 0, 0.0, 0.0
    for x in xs:
        n += 1
        delta = x - mean
        mean += delta / n
        m2 += delta * (x - mean)
    var = m2 / (n - 1) if n > 1 else float("nan")
    return mean, var


@sample(POINTS, CENTROIDS)
def kmeans_assign(X, centroids):
    n, k = X.shape[0], centroids.shape[0]
    labels = np.zeros(n, dtype=np.int64)
    inertia = 0.0
    for i in range(n):
        best, best_d = -1, math.inf
        for j in range(k):
            d = 0.0
            for c in range(X.shape[1]):
                diff = X[i, c] - centroids[j, c]
                d += diff * diff
            if d < best_d:
                best, best_d = j, d
        labels[i] = best
        inertia += best_d
    return labels, inertia


@sample(POINTS, CENTROIDS)
def kmeans_update(X, centroids):
    d = ((X[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=-1)
    labels = np.argmin(d, axis=1)
    new = centroids.copy()
    for j in range(centroids.shape[0]):
        members = X[labels == j]
        if len(members):
            new[j] = members.mean(axis=0)
    return new, labels


# --- root finding and polynomials ------------------------------------------------------------


def cubic(x):
    return x**3 - 2 * x - 5


def dcubic(x):
    return 3 * x**2 - 2


@sample(cubic, dcubic, 2.0)
@sample(cubic, dcubic, 2.0, tol=1e-30, maxiter=5)  # does not converge: RuntimeError
@sample(math.cos, lambda x: -math.sin(x), 0.0)  # zero derivative: ZeroDivisionError
def newton(f, df, x0, tol=1e-12, maxiter=50):
    x = x0
    it = 0
    while it < maxiter:
        fx = f(x)
        step = fx / df(x)
        x -= step
        if abs(step) < tol:
            return x, it
        it += 1
    raise RuntimeError(f"newton: no convergence after {maxiter} iterations (x={x})")


@sample(cubic, 2.0, 3.0)
@sample(cubic, 3.0, 4.0)  # no sign change
def bisect(f, a, b, tol=1e-10):
    fa, fb = f(a), f(b)
    if fa * fb > 0:
        raise ValueError("root not bracketed")
    while b - a > tol:
        m = 0.5 * (a + b)
        fm = f(m)
        if fm == 0:
            return m
        if fa * fm < 0:
            b, fb = m, fm
        else:
            a, fa = m, fm
    return 0.5 * (a + b)


@sample([1.0, -3.0, 0.0, 2.0], 1.5)
@sample([], 2.0)
@sample(vec(2.0, 0.5, -1.0), vec(0.0, 1.0, 2.0))  # coefficients highest first, vector x
def horner(coeffs, x):
    acc = 0.0
    for c in coeffs:
        acc = acc * x + c
    return acc


# --- sorting and partitioning ----------------------------------------------------------------


@sample([3.0, 8.0, 1.0, 9.0, 4.0, 7.0, 2.0], 0, 6)
@sample([5, 5, 5], 0, 2)
def lomuto_partition(a, lo, hi):
    pivot = a[hi]
    i = lo
    for j in range(lo, hi):
        if a[j] <= pivot:
            a[i], a[j] = a[j], a[i]
            i += 1
    a[i], a[hi] = a[hi], a[i]
    return i


@sample(vec(3.0, 8.0, 1.0, 9.0, 4.0, 7.0, 2.0), 0, 6)
@sample(vec(1.0, 1.0), 0, 1)
def hoare_partition(a, lo, hi):
    pivot = a[(lo + hi) // 2]
    i, j = lo - 1, hi + 1
    while True:
        i += 1
        while a[i] < pivot:
            i += 1
        j -= 1
        while a[j] > pivot:
            j -= 1
        if i >= j:
            return j
        a[i], a[j] = a[j], a[i]


@sample([3.0, 8.0, 1.0, 9.0, 4.0, 7.0, 2.0, 5.0, 6.0, 0.0])
@sample([])
def quicksort(a, lo=0, hi=None):
    if hi is None:
        hi = len(a) - 1
    if lo < hi:
        p = lomuto_partition(a, lo, hi)
        quicksort(a, lo, p - 1)
        quicksort(a, p + 1, hi)
    return a


# --- stencils --------------------------------------------------------------------------------


@sample(ROD.copy(), 0.25, 5)
def heat_1d_loops(u, alpha, steps):
    n = len(u)
    for _ in range(steps):
        new = u.copy()
        for i in range(1, n - 1):
            new[i] = u[i] + alpha * (u[i - 1] - 2 * u[i] + u[i + 1])
        u[:] = new  # in place: the caller sees the final temperatures
    return u.sum()


@sample(ROD.copy(), 0.25, 5)
def heat_1d_slices(u, alpha, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[:-2] - 2 * u[1:-1] + u[2:])
    return u.sum()


@sample(GRID, 0.5)
def laplacian_2d_loops(u, h):
    ny, nx = u.shape
    lap = np.zeros_like(u)
    for i in range(1, ny - 1):
        for j in range(1, nx - 1):
            lap[i, j] = (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4 * u[i, j]) / h**2
    return lap


@sample(GRID, 0.5)
def laplacian_2d_slices(u, h):
    lap = np.zeros_like(u)
    lap[1:-1, 1:-1] = (
        u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    ) / h**2
    return lap


@sample(GRID.copy(), 10)
def jacobi_smooth_2d(u, sweeps):
    """Smooth the interior in place with Jacobi sweeps; return the last update's size."""
    change = 0.0
    for sweep in range(sweeps):
        old = u.copy()
        u[1:-1, 1:-1] = 0.25 * (old[:-2, 1:-1] + old[2:, 1:-1] + old[1:-1, :-2] + old[1:-1, 2:])
        change = np.abs(u - old).max()
        if change < 1e-3:
            break
    return sweep, change


# --- linear algebra --------------------------------------------------------------------------


@sample(SPD, 100, 1e-10)
@sample(np.array([[0.0, -1.0], [1.0, 0.0]]), 5, 1e-12)  # a rotation: no convergence
def power_iteration(A, iters, tol):
    v = np.ones(A.shape[0]) / math.sqrt(A.shape[0])
    lam = 0.0
    for k in range(iters):
        w = A @ v
        lam_new = float(v @ w)
        v = w / np.linalg.norm(w)
        if abs(lam_new - lam) < tol * abs(lam_new):
            return lam_new, v, k
        lam = lam_new
    return lam, v, -1


@sample(SPD, vec(1.0, 2.0, 3.0), np.zeros(3), 25)
def gauss_seidel(A, b, x, sweeps):
    """In place on ``x``; returns the residual norm after each sweep."""
    n = len(b)
    history = []
    for _ in range(sweeps):
        for i in range(n):
            s = b[i]
            for j in range(n):
                if j != i:
                    s -= A[i, j] * x[j]
            x[i] = s / A[i, i]
        history.append(np.linalg.norm(A @ x - b))
    return history


@sample(SPD, vec(1.0, 2.0, 3.0), 1e-8, 200)
@sample(SPD, vec(1.0, 2.0, 3.0), 1e-8, 3)
def jacobi_solve(A, b, tol, maxiter):
    D = np.diag(A)
    R = A - np.diagflat(D)
    x = np.zeros_like(b)
    for it in range(maxiter):
        x_new = (b - R @ x) / D
        if np.linalg.norm(x_new - x, ord=np.inf) < tol:
            return x_new, it + 1
        x = x_new
    else:
        return x, -1


@sample(SPD)
@sample(np.array([[1.0, 2.0], [2.0, 1.0]]))  # not positive definite
def cholesky(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        s = A[j, j] - np.dot(L[j, :j], L[j, :j])
        if s <= 0:
            raise np.linalg.LinAlgError("matrix is not positive definite")
        L[j, j] = math.sqrt(s)
        for i in range(j + 1, n):
            L[i, j] = (A[i, j] - np.dot(L[i, :j], L[j, :j])) / L[j, j]
    return L


# --- quadrature ------------------------------------------------------------------------------


@sample(np.sin(np.linspace(0, np.pi, 7)), np.linspace(0, np.pi, 7))
@sample([1.0, 2.0, 4.0], [0.0, 1.0, 3.0])
def cumtrapz(y, x):
    out = [0.0]
    total = 0.0
    for i in range(1, len(y)):
        total += 0.5 * (x[i] - x[i - 1]) * (y[i] + y[i - 1])
        out.append(total)
    return np.array(out)


@sample(math.exp, 0.0, 1.0, 10)
@sample(math.exp, 0.0, 1.0, 3)  # odd: ValueError
def simpson(f, a, b, n):
    if n % 2:
        raise ValueError("n must be even")
    h = (b - a) / n
    s = f(a) + f(b)
    s += 4 * sum(f(a + i * h) for i in range(1, n, 2))
    s += 2 * sum(f(a + i * h) for i in range(2, n, 2))
    return s * h / 3


# --- trees -----------------------------------------------------------------------------------


@sample(("+", "a", ("*", "b", ("-", "c", 1.5))), {"a": 1.0, "b": 2.0, "c": 4.0})
@sample(("/", 1.0, ("neg", ("-", "a", "a"))), {"a": 3.0})  # ZeroDivisionError
@sample(("^", "a", 2.0), {"a": 1.0})  # unknown operator
def eval_tree(node, env):
    if isinstance(node, str):
        return env[node]
    if not isinstance(node, tuple):
        return node
    op = node[0]
    if op == "neg":
        return -eval_tree(node[1], env)
    left, right = eval_tree(node[1], env), eval_tree(node[2], env)
    if op == "+":
        return left + right
    elif op == "-":
        return left - right
    elif op == "*":
        return left * right
    elif op == "/":
        return left / right
    raise ValueError(f"unknown operator {op!r}")


@sample((1.0, (2.0, 3.0), ((4.0,), 5.0, ())))
@sample(7.0)
def sum_leaves(tree):
    if isinstance(tree, tuple):
        return sum(sum_leaves(child) for child in tree)
    return tree


@sample((1.0, (2.0, (3.0, (4.0,)))))
def tree_depth_and_leaves(tree):
    """Iteratively, with an explicit stack of (node, depth) pairs."""
    stack = [(tree, 0)]
    leaves, deepest = [], 0
    while stack:
        node, depth = stack.pop()
        if isinstance(node, tuple):
            for child in reversed(node):
                stack.append((child, depth + 1))
        else:
            leaves.append(node)
            deepest = max(deepest, depth)
    return leaves, deepest


# --- objects -----------------------------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class Particle:
    pos: np.ndarray
    vel: np.ndarray
    mass: float
    age: int = 0

    def __eq__(self, other: object) -> bool:  # arrays compared by value, for the tests
        return (
            isinstance(other, Particle)
            and np.array_equal(self.pos, other.pos)
            and np.array_equal(self.vel, other.vel)
            and self.mass == other.mass
            and self.age == other.age
        )


def gravity(pos):
    return np.array([0.0, -9.81 * 2.0])


@sample(Particle(vec(0.0, 10.0), vec(1.0, 0.0), 2.0), gravity, 0.1, 5)
def particle_update(p, force, dt, steps):
    """Semi-implicit Euler, in place; returns the kinetic energy."""
    for _ in range(steps):
        a = force(p.pos) / p.mass
        p.vel += a * dt
        p.pos = p.pos + p.vel * dt
        p.age += 1
        if p.pos[1] < 0:
            p.pos[1] = -p.pos[1]
            p.vel[1] *= -0.9
    return 0.5 * p.mass * float(p.vel @ p.vel)


class SpringParams(t.NamedTuple):
    k: float
    c: float
    m: float = 1.0
    dt: float = 0.01


@sample(SpringParams(4.0, 0.2), 1.0, 0.0, 50)
@sample(SpringParams(k=1.0, c=0.0, m=2.0, dt=0.1), 0.0, 1.0, 10)
def damped_spring(params, x, v, steps):
    k, c, m, dt = params
    energy = []
    for _ in range(steps):
        a = -(params.k * x + params.c * v) / params.m
        v += a * dt
        x += v * dt
        energy.append(0.5 * m * v * v + 0.5 * k * x * x)
    return x, v, max(energy) if energy else 0.0, params._replace(dt=dt * 2)


# --- closures ----------------------------------------------------------------------------------


def make_step(lr):
    def step(w, g):
        return w - lr * g

    return step


def make_momentum(lr, beta=0.9):
    velocity = None

    def step(w, g):
        nonlocal velocity
        velocity = g if velocity is None else beta * velocity + g
        return w - lr * velocity

    return step


def quadratic_grad(w):
    return 2 * (w - vec(1.0, -2.0))


@sample(0.1, vec(0.0, 0.0), 30)
@sample(1.5, vec(0.0, 0.0), 5)  # too large a step: diverges
def descend(lr, w, n):
    step = make_step(lr)
    trace = [float(np.sum((w - vec(1.0, -2.0)) ** 2))]
    for _ in range(n):
        w = step(w, quadratic_grad(w))
        trace.append(float(np.sum((w - vec(1.0, -2.0)) ** 2)))
    return w, trace[-1] < trace[0]


@sample(0.05, vec(3.0, 3.0), 40)
def descend_momentum(lr, w, n):
    step = make_momentum(lr)
    for i in range(n):
        w = step(w, quadratic_grad(w))
    return w


# --- classic test functions ------------------------------------------------------------------


@sample(vec(1.0, 1.0, 1.0))
@sample(vec(-1.2, 1.0, 0.5, 2.0))
def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@sample(vec(-1.2, 1.0, 0.5, 2.0))
def rosenbrock_grad(x):
    g = np.zeros_like(x)
    xm, xm_m1, xm_p1 = x[1:-1], x[:-2], x[2:]
    g[1:-1] = 200 * (xm - xm_m1**2) - 400 * (xm_p1 - xm**2) * xm - 2 * (1 - xm)
    g[0] = -400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0])
    g[-1] = 200 * (x[-1] - x[-2] ** 2)
    return g


@sample([-1.2, 1.0, 0.5])
def rosenbrock_loop(x):
    total = 0.0
    for i in range(len(x) - 1):
        total += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return total
