"""The floor of Rosenbrock's gradient at 10^6 with reused buffers (issue 14's target of 1.6).

``python benchmarks/rosenbrock_floor.py`` prints, from interleaved repeats in one process, the
primal, the hand-written gradient of ``benchmarks/peers_workloads.py`` (fresh temporaries) and
the same gradient written with ``out=`` into buffers made once, the reverse fused by hand (no
allocation at all, the fewest passes over memory we found), and gibbous through
``prepare_gradient``.  The buffered gradient's ratio to the primal is the floor
docs/benchmarks.md quotes.
"""

from __future__ import annotations

import os
import sys
import timeit
import typing as t

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_workloads import rosenbrock, rosenbrock_hand  # noqa: E402

import gibbous  # noqa: E402

N = 10**6
Array = np.ndarray[t.Any, t.Any]


def buffered(n: int) -> t.Callable[[Array], tuple[float, Array]]:
    c, d, e, h, i, j = (np.empty(n - 1) for _ in range(6))
    gx = np.empty(n)

    def gradient(x: Array) -> tuple[float, Array]:
        a, b = x[1:], x[:-1]
        np.square(b, out=c)
        np.subtract(a, c, out=d)
        np.square(d, out=e)
        np.multiply(100, e, out=e)
        np.subtract(1, b, out=h)
        np.square(h, out=i)
        np.add(e, i, out=j)
        value = float(np.sum(j))
        gx.fill(0)
        np.multiply(h, -2.0, out=i)  # d/db of (1 - b)^2
        np.add(gx[:-1], i, out=gx[:-1])
        np.multiply(d, 200.0, out=e)  # d/da of 100 (a - b^2)^2
        np.add(gx[1:], e, out=gx[1:])
        np.multiply(e, b, out=e)  # d/db through b^2: -2 b (200 d)
        np.multiply(e, -2.0, out=e)
        np.add(gx[:-1], e, out=gx[:-1])
        return value, gx

    return gradient


def main() -> None:
    x = np.random.default_rng(0).standard_normal(N)
    fast = buffered(N)
    value, g = fast(x)
    step = 1e-6
    probe = np.random.default_rng(1).standard_normal(N)
    fd = (rosenbrock(x + step * probe) - rosenbrock(x - step * probe)) / (2 * step)
    assert abs(fd - g @ probe) <= 1e-5 * abs(fd), (fd, g @ probe)
    assert np.isclose(value, rosenbrock(x))
    prepared = gibbous.prepare_gradient(rosenbrock, x)
    runs = {
        "primal": lambda: rosenbrock(x),
        "hand, fresh": rosenbrock_hand((x,)),
        "buffered floor": lambda: fast(x),
        "gibbous prepared": lambda: prepared(x),
    }
    best = {name: float("inf") for name in runs}
    for _ in range(7):
        for name, fn in runs.items():
            best[name] = min(best[name], min(timeit.repeat(fn, number=5, repeat=3)) / 5)
    for name, seconds in best.items():
        print(f"{name:16s} {seconds * 1e3:7.2f} ms  ratio {seconds / best['primal']:.2f}")


if __name__ == "__main__":
    main()
