"""Warm calls where gibbous's own per-call work shows: run ``python benchmarks/bench_calls.py``.

Small functions, so that the fixed costs of a call (the API's checks, the rule's bookkeeping,
the per-thread dispatch of the rule a user holds) are a large part of the time:

* ``scalar``: ``x * x + math.sin(x)`` of a float through ``value_and_gradient``;
* ``scalar, bare``: the same rule called directly, then its pullback;
* ``mlp``: a tanh MLP 8 -> 16 -> 1 on a batch of 8, through ``value_and_gradient``;
* ``matmul out=``: the stateful library rule of ``np.matmul(A, B, out=C)`` (4x4), called
  directly, then its pullback.

``--tree PATH`` imports gibbous from another checkout (to compare two trees: run both, in
turns).  Prints the median and minimum microseconds per call of each row.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import typing as t
from pathlib import Path

import numpy as np


def scalar(x: float) -> float:
    return x * x + math.sin(x)


def mlp(W1: t.Any, b1: t.Any, W2: t.Any, X: t.Any, y: t.Any) -> float:
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 - y
    return float(np.sum(r * r))


def rows() -> dict[str, t.Callable[[], object]]:
    import gibbous
    from gibbous.tangents.model import NO_TANGENT, CoDual, zero_fdatas

    rule = gibbous.build_rrule(scalar, 0.3)
    fs = CoDual(scalar, NO_TANGENT)
    x = CoDual(0.3, NO_TANGENT)

    def bare() -> object:
        _, pullback = rule(fs, x)
        return pullback(1.0)

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((8, 16)), rng.standard_normal(16), rng.standard_normal(16),
            rng.standard_normal((8, 8)), rng.standard_normal(8))  # fmt: skip
    mlp_rule = gibbous.build_rrule(mlp, *args)
    A, B, C = rng.standard_normal((4, 4)), rng.standard_normal((4, 4)), np.zeros((4, 4))
    matmul = gibbous.build_rrule(np.matmul, A, B, out=C)
    fd = zero_fdatas(np.matmul, A, B, C)
    operands = (CoDual(np.matmul, fd[0]), CoDual(A, fd[1]), CoDual(B, fd[2]))
    out = CoDual(C, fd[3])

    def stateful() -> object:
        _, pullback = matmul(*operands, out=out)
        return pullback(NO_TANGENT)

    return {
        "scalar": lambda: gibbous.value_and_gradient(rule, scalar, 0.3),
        "scalar, bare": bare,
        "mlp": lambda: gibbous.value_and_gradient(mlp_rule, mlp, *args),
        "matmul out=, bare": stateful,
    }


def measure(fns: dict[str, t.Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """Seconds per call: ``repeat`` samples of about 20 ms each, the rows taking turns."""
    counts = {}
    for name, fn in fns.items():
        for _ in range(100):
            fn()
        start = time.perf_counter()
        fn()
        counts[name] = max(1, int(0.02 / max(time.perf_counter() - start, 1e-7)))
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            n = counts[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            out[name].append((time.perf_counter() - start) / n)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--repeat", type=int, default=25)
    opts = parser.parse_args()
    sys.path.insert(0, opts.tree)
    times = measure(rows(), opts.repeat)
    for name, samples in times.items():
        median, least = statistics.median(samples) * 1e6, min(samples) * 1e6
        print(f"{name:20} median {median:7.2f} us   min {least:7.2f} us")


if __name__ == "__main__":
    main()
