"""``python -m gibbous demo``: the README's main job, end to end in a few seconds.

1. ``loss(W, x)`` from the README: its typed IR, the rule each call site resolved to, its
   gradient checked against central finite differences, and the warm gradient / primal time
   ratio and NumPy memory allocated per call.
2. The seed's in-place matmul ``np.matmul(A, B, out=C)``: the stateful rule saves the C it
   overwrites into a buffer it keeps, so a warm forward + reverse holds no NumPy memory.
3. A small MLP trained for a few steps with a plain Python loop over its layers, then timed.
"""

from __future__ import annotations

import re
import sys
import time
import tracemalloc
import typing as t

import numpy as np

import gibbous
from gibbous.inspect import code_ir, format_rule_table, rule_table
from gibbous.tangents.model import CoDual, NoTangent, zero_fdata
from gibbous.testing.allocations import measure

Array = np.ndarray[t.Any, np.dtype[np.float64]]


def loss(W: Array, x: Array) -> float:
    h = np.tanh(W @ x)
    return float(np.sum(h * h))


def mul(C: Array, A: Array, B: Array) -> None:
    np.matmul(A, B, out=C)


def mlp_loss(params: list[tuple[Array, Array]], x: Array, y: Array) -> float:
    h = x
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W, b = params[-1]
    out = h @ W + b
    return float(np.mean((out - y) ** 2))


def central_difference(f: t.Callable[[], float], a: Array, index: tuple[int, ...]) -> float:
    eps = 1e-6
    old = a[index]
    a[index] = old + eps
    up = f()
    a[index] = old - eps
    down = f()
    a[index] = old
    return (up - down) / (2 * eps)


def _best_time(fn: t.Callable[[], object], repeat: int = 7, number: int = 200) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def _without_locations(text: str) -> str:
    text = re.sub(r' loc\("[^"]*":\d+\) \{', " {", text)  # the header's
    return re.sub(r' loc\("[^"]*":(\d+)\)', r"  # line \1", text)


def show_loss(say: t.Callable[[str], object]) -> None:
    rng = np.random.default_rng(0)
    W, x = rng.standard_normal((8, 4)), rng.standard_normal(4)
    say("1. loss(W, x) = sum(tanh(W @ x)**2)\n\n")
    say("typed and optimized IR, as gibbous.inspect.code_ir shows it:\n\n")
    say(_without_locations(str(code_ir(loss, W, x, stage="optimized"))) + "\n")
    say("the rule each call site resolved to (gibbous.inspect.rule_table; lines of demo.py):\n\n")
    say(format_rule_table(rule_table(loss, W, x)) + "\n")
    rule = gibbous.build_rrule(loss, W, x)
    y, (_, dW, dx) = gibbous.value_and_gradient(rule, loss, W, x)
    checks = [((1, 2), W, dW), ((7, 0), W, dW), ((3,), x, dx)]
    say(f"value {y:.6f}; gradient entries against central finite differences:\n")
    for index, a, da in checks:
        fd = central_difference(lambda: loss(W, x), a, index)
        name = "dW" if a is W else "dx"
        say(f"  {name}{list(index)}  gibbous {da[index]: .9f}   finite diff {fd: .9f}\n")
        assert abs(da[index] - fd) < 1e-6 * max(1.0, abs(fd))
    _say_warm_costs(say, lambda: loss(W, x), lambda: gibbous.value_and_gradient(rule, loss, W, x))
    say(
        "(tracemalloc's NumPy domain, temporaries included; the dW and dx returned are "
        f"{dW.nbytes + dx.nbytes} B of it)\n\n"
    )


def _say_warm_costs(
    say: t.Callable[[str], object],
    primal: t.Callable[[], object],
    gradient: t.Callable[[], object],
    number: int = 200,
    allocations: bool = True,
) -> None:
    """Time and NumPy memory of warm calls.  ``gibbous.testing.allocations.measure`` counts
    every array allocated during the call, temporaries included, by sampling before each
    bytecode instruction: exact, but too slow for the demo's time budget on a large call."""
    primal_time = _best_time(primal, number=number)
    gradient_time = _best_time(gradient, number=number)
    say(
        f"warm, per call:   primal {primal_time * 1e6:7.1f} us   value_and_gradient "
        f"{gradient_time * 1e6:7.1f} us   ratio {gradient_time / primal_time:.1f}x\n"
    )
    if allocations:
        primal_bytes = measure(lambda mark: primal()).allocated
        gradient_bytes = measure(lambda mark: gradient()).allocated
        say(
            f"NumPy allocated:  primal {primal_bytes:7d} B    value_and_gradient "
            f"{gradient_bytes:7d} B\n"
        )


def show_inplace_matmul(say: t.Callable[[str], object]) -> None:
    rng = np.random.default_rng(1)
    A, B, C = rng.standard_normal((32, 16)), rng.standard_normal((16, 8)), np.zeros((32, 8))
    say("2. the seed's in-place matmul: def mul(C, A, B): np.matmul(A, B, out=C)\n\n")
    rule = gibbous.build_rrule(mul, C, A, B)
    f = CoDual(mul, NoTangent())
    coduals = [CoDual(v, zero_fdata(v)) for v in (C, A, B)]
    before = C.copy()
    for _ in range(3):  # warm up: the stateful rule allocates its buffers once
        _, pullback = rule(f, *coduals)
        pullback(NoTangent())
    numpy_only = tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)
    tracemalloc.start()
    _, pullback = rule(f, *coduals)
    held = tracemalloc.take_snapshot().filter_traces([numpy_only])
    held_bytes = sum(stat.size for stat in held.statistics("filename"))
    pullback(NoTangent())
    tracemalloc.stop()
    say(
        f"warm forward + reverse: {held_bytes} bytes of NumPy memory held between them\n"
        f"(a rule without state would copy the overwritten C, {C.nbytes} bytes, every call);\n"
        f"after the pullback C is restored: {bool(np.array_equal(C, before))}\n\n"
    )


def show_mlp(say: t.Callable[[str], object]) -> None:
    rng = np.random.default_rng(2)
    sizes = [3, 16, 16, 1]
    params = [
        (rng.standard_normal((m, n)) / np.sqrt(m), np.zeros(n))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    x = rng.standard_normal((64, 3))
    y = np.sin(x.sum(axis=1, keepdims=True))
    say("3. an MLP (3-16-16-1, tanh) trained by gradient descent, a Python loop over layers\n\n")
    start = time.perf_counter()
    rule = gibbous.build_rrule(mlp_loss, params, x, y)
    say(f"rule built in {(time.perf_counter() - start) * 1e3:.0f} ms\n")
    for step in range(41):
        value, (_, dparams, _, _) = gibbous.value_and_gradient(rule, mlp_loss, params, x, y)
        if step == 0:
            W0 = params[0][0]
            fd = central_difference(lambda: mlp_loss(params, x, y), W0, (0, 0))
            say(f"  dW0[0, 0]: gibbous {dparams[0][0][0, 0]: .9f}, finite diff {fd: .9f}\n")
            assert abs(dparams[0][0][0, 0] - fd) < 1e-6 * max(1.0, abs(fd))
        if step % 10 == 0:
            say(f"  step {step:2d}  loss {value:.5f}\n")
        for (W, b), (dW, db) in zip(params, dparams):
            W -= 0.2 * dW
            b -= 0.2 * db
    _say_warm_costs(
        say,
        lambda: mlp_loss(params, x, y),
        lambda: gibbous.value_and_gradient(rule, mlp_loss, params, x, y),
        number=50,
        allocations=False,
    )
    say("\n")


def main(out: t.TextIO = sys.stdout) -> int:
    start = time.perf_counter()
    say = out.write
    say("gibbous demo — reverse-mode AD of plain Python + NumPy, derived from bytecode\n\n")
    show_loss(say)
    show_inplace_matmul(say)
    show_mlp(say)
    say(f"demo finished in {time.perf_counter() - start:.2f} s\n")
    return 0
