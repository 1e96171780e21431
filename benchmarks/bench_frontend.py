"""Frontend and NumPy-backend timings: run ``python benchmarks/bench_frontend.py``.

Measures, in one process (see benchmarks/README.md for what each figure means):

1. warm decode: ``function_ir`` on ``fit_logistic`` below (a realistic ~50-line function), and
   ``decode_ops`` alone (bytecode to neutral ops, the first stage of it);
2. decode + type inference, if ``gibbous.infer.infer_types`` is importable;
3. the compiled primal's call overhead against the native function, on a tiny scalar function
   and on the Rosenbrock function of 10**6 elements, with native and compiled calls
   interleaved so that both see the same machine state.

Nothing here asserts a time; the script prints a table.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import typing as t

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from gibbous.backends.numpy import compile_function  # noqa: E402
from gibbous.frontend import decode_ops, function_ir  # noqa: E402
from gibbous.frontend.build import FunctionBuilder  # noqa: E402
from gibbous.ir import verify  # noqa: E402
from gibbous.ir.core import Function  # noqa: E402

# --- the functions measured ----------------------------------------------------------------


def fit_logistic(X, y, w, lr, epochs, l2, tol):
    """Logistic regression by gradient descent with step decay, clipping and early stopping."""
    n, d = X.shape
    if y.shape != (n,):
        raise ValueError(f"y has shape {y.shape}, expected ({n},)")
    mu = X.mean(axis=0)
    sigma = X.std(axis=0)
    sigma[sigma == 0] = 1.0
    X = (X - mu) / sigma
    history = []
    best_loss = math.inf
    best_w = w.copy()
    stall = 0
    for epoch in range(epochs):
        z = X @ w
        p = 1.0 / (1.0 + np.exp(-z))
        eps = 1e-12
        loss = -np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))
        loss += 0.5 * l2 * float(w @ w)
        grad = X.T @ (p - y) / n + l2 * w
        gnorm = np.linalg.norm(grad)
        if not np.isfinite(loss):
            raise FloatingPointError(f"loss diverged at epoch {epoch}")
        if loss < best_loss - tol:
            best_loss, best_w = loss, w.copy()
            stall = 0
        else:
            stall += 1
            if stall > 5:
                lr *= 0.5
                stall = 0
        step = lr / (1.0 + 0.01 * epoch)
        for j in range(d):
            if abs(grad[j]) > 10.0:
                grad[j] = math.copysign(10.0, grad[j])
        w = w - step * grad
        history.append((epoch, loss, gnorm))
        if gnorm < tol:
            break
    correct = 0
    for i in range(n):
        pred = 1.0 if X[i] @ best_w > 0 else 0.0
        if pred == y[i]:
            correct += 1
    accuracy = correct / n
    summary = {"loss": best_loss, "accuracy": accuracy, "epochs": len(history)}
    if accuracy < 0.5:
        print(f"warning: accuracy {accuracy:.2f} is below chance")
    return best_w / sigma, summary, history


def tiny(x, y):
    return x * y + 1.0


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


# --- timing --------------------------------------------------------------------------------


def timings(fn: t.Callable[[], object], repeat: int) -> list[float]:
    """Seconds per call of ``fn``, ``repeat`` times, after one call not counted (warm-up)."""
    fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def interleaved(
    a: t.Callable[[], object], b: t.Callable[[], object], repeat: int, inner: int
) -> tuple[list[float], list[float]]:
    """Seconds per call of ``a`` and of ``b``: ``repeat`` samples of ``inner`` calls each,
    alternating which goes first; one warm-up round is not counted."""
    ta: list[float] = []
    tb: list[float] = []
    for r in range(repeat + 1):
        pair = [(a, ta), (b, tb)] if r % 2 else [(b, tb), (a, ta)]
        for fn, out in pair:
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            elapsed = (time.perf_counter() - start) / inner
            if r:
                out.append(elapsed)
    return ta, tb


def uncached_builder(fn: t.Callable[..., object]) -> t.Callable[[], Function]:
    """What builds the IR from scratch: ``function_ir`` itself while it has no cache (it has
    none today), otherwise the builder it wraps."""
    if function_ir(fn) is function_ir(fn):  # a cache appeared: go around it
        return lambda: FunctionBuilder(t.cast(t.Any, fn)).build()
    return lambda: function_ir(fn)


def fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:8.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:8.2f} us"
    return f"{seconds * 1e9:8.1f} ns"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=200, help="samples for the decode rows")
    parser.add_argument("--quick", action="store_true", help="fewer samples everywhere")
    opts = parser.parse_args()
    repeat = 20 if opts.quick else opts.repeat
    rows: list[tuple[str, str, str, str]] = []

    def row(name: str, samples: list[float], note: str = "") -> None:
        rows.append((name, fmt(statistics.median(samples)), fmt(min(samples)), note))

    lines = len(__import__("inspect").getsource(fit_logistic).splitlines())
    build = uncached_builder(fit_logistic)
    ir = build()
    verify(ir)
    code = fit_logistic.__code__
    row(f"decode_ops ({lines}-line fit_logistic)", timings(lambda: decode_ops(code), repeat),
        f"{len(decode_ops(code))} ops")  # fmt: skip
    row("function_ir (decode + blocks + SSA)", timings(build, repeat),
        f"{len(ir.blocks)} blocks, {sum(1 for _ in ir.calls())} calls")  # fmt: skip

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = (X @ np.arange(5.0) > 0).astype(float)
    args = (X, y, np.zeros(5), 0.1, 50, 1e-3, 1e-6)
    try:
        from gibbous.ir.types import typeof
        from gibbous.infer import infer_types
    except ImportError as e:
        rows.append(("function_ir + infer_types", "-", "-", f"not importable: {e}"))
    else:
        types_ = [typeof(a) for a in args]

        def decode_and_infer() -> Function:
            return infer_types(build(), types_, callee_ir=function_ir)

        try:
            typed = decode_and_infer()
            verify(typed)
        except Exception as e:  # inference is being written: report, do not stop
            rows.append(("function_ir + infer_types", "-", "-", f"{type(e).__name__}: {e}"[:60]))
        else:
            samples = timings(decode_and_infer, repeat)
            target = "under 20 ms: yes" if statistics.median(samples) < 0.020 else "OVER 20 ms"
            row("function_ir + infer_types", samples, target)

    # Call overhead of the compiled primal against the native function.
    native_fit = fit_logistic(*args)
    assert str(native_fit[1]) == str(compile_function(ir)(*args)[1])

    compiled_tiny = compile_function(function_ir(tiny))
    n_tiny = 20 if opts.quick else 200
    nat, comp = interleaved(lambda: tiny(1.5, 2.0), lambda: compiled_tiny(1.5, 2.0), n_tiny, 2000)
    row("tiny(x, y): native call", nat)
    row("tiny(x, y): compiled call", comp,
        f"ratio compiled/native {statistics.median(comp) / statistics.median(nat):.2f}")  # fmt: skip

    x = rng.standard_normal(10**6)
    compiled_rosen = compile_function(function_ir(rosenbrock))
    assert compiled_rosen(x) == rosenbrock(x)
    n_rosen = 6 if opts.quick else 40
    nat, comp = interleaved(lambda: rosenbrock(x), lambda: compiled_rosen(x), n_rosen, 1)
    row("rosenbrock(10**6): native call", nat)
    row("rosenbrock(10**6): compiled call", comp,
        f"ratio compiled/native {statistics.median(comp) / statistics.median(nat):.3f}")  # fmt: skip

    print(f"gibbous frontend benchmark, Python {sys.version.split()[0]}, NumPy {np.__version__}")
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'median':>11}  {'min':>11}  note")
    print("-" * (width + 40))
    for name, med, low, note in rows:
        print(f"{name:<{width}}  {med:>11}  {low:>11}  {note}")


if __name__ == "__main__":
    main()
