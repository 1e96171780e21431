"""Gradients of NumPy's and SciPy's own Python, derived from their source, against the plain
primal: run ``python benchmarks/library_derived.py [--quick]``.

Issue 31's performance line: a function gibbous derives from NumPy's or SciPy's source (no
hand rule) may not cost much more than a hand rule would; where its gradient costs more than
5x the plain NumPy primal, a hand rule replaces it.  Each row is one loss, a weighted sum of
the function's result, at two sizes; the gradient is ``value_and_gradient`` of a rule built
once (warm: the first calls are not timed), and the primal is the same loss called plainly.
The samples of the two alternate, so that both see the same machine; the ratio is of medians.
Before timing, each gradient is checked against central differences (a mismatch is printed
in place of a time).  docs/benchmarks.md, "Derived library functions", has the figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import typing as t
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def losses(n: int) -> dict[str, tuple[t.Callable[[t.Any], t.Any], t.Any]]:
    """The rows at size ``n``: ``(loss, x)``."""
    import scipy.stats

    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    w = np.cos(np.arange(n))
    m = max(2, int(np.sqrt(n)))
    X = rng.standard_normal((4, m))
    wc = np.cos(np.arange(16)).reshape(4, 4)
    c = rng.standard_normal(8)
    return {
        "np.median": (lambda v: np.median(v), x),
        "np.cov": (lambda v: np.sum(np.cov(v) * wc), X),
        "np.trapezoid": (lambda v: np.trapezoid(v * w), x),
        "np.polyval": (lambda v: np.sum(np.polyval(c, v) * w), x),
        "scipy.stats.norm.logpdf": (lambda v: np.sum(scipy.stats.norm.logpdf(v, 0.3, 1.7) * w), x),
    }


def _check(f: t.Callable[[t.Any], t.Any], x: t.Any, g: t.Any) -> str | None:
    v = np.cos(np.arange(x.size) * 1.3).reshape(x.shape)
    h = 1e-5
    fd = (f(x + h * v) - f(x - h * v)) / (2 * h)
    got = float(np.sum(np.asarray(g) * v))
    return None if abs(got - fd) <= 1e-5 * max(1.0, abs(fd)) else f"WRONG: {got} vs {fd}"


def measure(name: str, f: t.Callable[[t.Any], t.Any], x: t.Any, repeat: int) -> str:
    import gibbous

    try:
        rule = gibbous.build_rrule(f, x)
        _, (_, g) = gibbous.value_and_gradient(rule, f, x)
    except Exception as e:  # (a refusal: the row says which)
        return f"| {name} | {x.size} | | | {type(e).__name__}: {str(e).splitlines()[0][:80]} |"
    wrong = _check(f, x, g)
    if wrong is not None:
        return f"| {name} | {x.size} | | | {wrong} |"
    grad = lambda: gibbous.value_and_gradient(rule, f, x)  # noqa: E731
    plain = lambda: f(x)  # noqa: E731
    for fn in (grad, plain):
        for _ in range(20):
            fn()
    times: dict[str, list[float]] = {"grad": [], "plain": []}
    number = max(1, int(0.005 / max(_once(plain), 1e-7)))
    for _ in range(repeat):
        for key, fn in (("plain", plain), ("grad", grad)):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[key].append((time.perf_counter() - start) / number)
    p, gr = statistics.median(times["plain"]), statistics.median(times["grad"])
    return f"| {name} | {x.size} | {p * 1e3:.4f} | {gr * 1e3:.4f} | {gr / p:.1f} |"


def _once(fn: t.Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args(argv)
    repeat = 5 if args.quick else 31
    print("| function | n | primal (ms) | gradient (ms) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for n in (100, 100_000):
        for name, (f, x) in losses(n).items():
            print(measure(name, f, x, repeat), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
