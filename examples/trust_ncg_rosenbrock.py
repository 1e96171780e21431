"""Newton's method with gibbous's second derivatives: SciPy's trust-region Newton-CG on the
100-dimensional Rosenbrock function, given gibbous's gradient and Hessian-vector product.

Run it: ``python examples/trust_ncg_rosenbrock.py`` (needs SciPy: ``pip install scipy``).
The gradient is a reverse rule built once (``build_rrule``); the Hessian-vector product
``H(x) p`` is built once too (``build_hvp``: reverse mode over the forward-mode program of
``rosenbrock``), and SciPy calls both at every iterate.  The minimum is at ``x = 1``.
"""

from __future__ import annotations

import sys
import typing as t
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: this checkout's gibbous
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gibbous  # noqa: E402


def rosenbrock(x: np.ndarray) -> t.Any:
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def solve(n: int = 100) -> t.Any:
    from scipy.optimize import minimize

    x0 = np.where(np.arange(n) % 2 == 0, -1.2, 1.0)  # the classic start
    gradient_rule = gibbous.build_rrule(rosenbrock, x0)
    hessian_times = gibbous.build_hvp(rosenbrock, x0)

    def jac(x: np.ndarray) -> np.ndarray:
        return t.cast(np.ndarray, gibbous.value_and_gradient(gradient_rule, rosenbrock, x)[1][1])

    def hessp(x: np.ndarray, p: np.ndarray) -> np.ndarray:
        return t.cast(np.ndarray, hessian_times(x, p))

    return minimize(
        rosenbrock, x0, jac=jac, hessp=hessp, method="trust-ncg", options={"gtol": 1e-8}
    )


def main() -> None:
    result = solve()
    error = float(np.max(np.abs(result.x - 1.0)))
    print(f"trust-ncg on Rosenbrock (n = {result.x.size}): success={result.success}, "
          f"{result.nit} iterations, {result.nfev} values, {result.njev} gradients, "
          f"{result.nhev} Hessian-vector products")
    print(f"f = {result.fun:.3e}, max |x - 1| = {error:.3e}")
    if not result.success or error > 1e-6:
        raise SystemExit("did not converge to the minimum")


if __name__ == "__main__":
    main()
