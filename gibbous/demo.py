"""``python -m gibbous demo``: the README's main job.

The frontend (bytecode to IR) is the next layer to be built; until it lands, the demo writes the
IR of two example functions with the builder, exactly as the frontend will produce it after type
inference, then verifies it, runs the standard pass pipeline and round-trips it through the text
form.
"""

from __future__ import annotations

import inspect
import operator
import sys
import time
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Function, Location, structurally_equal
from gibbous.ir.parser import parse
from gibbous.ir.verify import verify
from gibbous.passes import PassManager


def loss(W: np.ndarray, x: np.ndarray) -> float:
    h = np.tanh(W @ x)
    return float(np.sum(h * h))


def poly(x: float, n: int) -> float:
    scale = 2 * 3  # folded by the passes
    acc = 0.0
    i = 0
    while i < n:
        acc = acc + x * scale
        unused = np.sin(x)  # noqa: F841  (dead: removed by the passes)
        i = i + 1
    return acc


def _lines(fn: t.Callable[..., object]) -> tuple[str, int]:
    _, first = inspect.getsourcelines(fn)
    return inspect.getsourcefile(fn) or "<demo>", first


def loss_ir() -> Function:
    file, first = _lines(loss)
    vec, mat, f64 = T.Array("float64", 1), T.Array("float64", 2), T.FLOAT
    f = Function("loss", [("W", mat), ("x", vec)], loc=Location(file, first))
    b = Builder(f)
    W, x = f.args
    b.loc = Location(file, first + 1)
    wx = b.call(operator.matmul, W, x, type=vec)
    h = b.call(np.tanh, wx, type=vec, name="h")
    b.loc = Location(file, first + 2)
    hh = b.call(operator.mul, h, h, type=vec)
    s = b.call(np.sum, hh, type=f64)
    y = b.call(float, s, type=f64)
    b.ret(y)
    return f


def poly_ir() -> Function:
    file, first = _lines(poly)

    def at(offset: int) -> Location:
        return Location(file, first + offset)

    f = Function("poly", [("x", T.FLOAT), ("n", T.INT)], loc=at(0))
    b = Builder(f)
    x, n = f.args
    b.loc = at(1)
    scale = b.call(operator.mul, 2, 3, type=T.INT, name="scale")
    head = b.add_block("while", [("acc", T.FLOAT), ("i", T.INT)])
    body = b.add_block("body")
    done = b.add_block("done")
    b.loc = at(3)
    b.jump(head, 0.0, 0)
    b.at_end(head)
    b.loc = at(5)
    acc, i = head.args
    cond = b.call(operator.lt, i, n, type=T.BOOL)
    b.branch(cond, body, [], done, [])
    b.at_end(body)
    b.loc = at(6)
    xs = b.call(operator.mul, x, scale, type=T.FLOAT)
    acc2 = b.call(operator.add, acc, xs, type=T.FLOAT, name="acc")
    b.loc = at(7)
    b.call(np.sin, x, type=T.FLOAT, name="unused")
    b.loc = at(8)
    i2 = b.call(operator.add, i, 1, type=T.INT, name="i")
    b.jump(head, acc2, i2)
    b.at_end(done)
    b.loc = at(9)
    b.ret(acc)
    return f


def main(out: t.TextIO = sys.stdout) -> int:
    start = time.perf_counter()
    say = out.write
    say("gibbous demo — the typed SSA IR\n\n")
    say("def loss(W, x):\n    h = np.tanh(W @ x)\n    return float(np.sum(h * h))\n\n")
    f = loss_ir()
    verify(f)
    say("typed IR for loss(W: f64[:,:], x: f64[:]):\n\n" + str(f) + "\n")

    g = poly_ir()
    verify(g)
    say("a loop, before the standard passes:\n\n" + str(g) + "\n")
    pm = PassManager(["fold", "dce", "cse", "simplify-cfg"], verify=True, timing=True)
    pm.run(g)
    say("after fold, dce, cse, simplify-cfg (verified after each):\n\n" + str(g) + "\n")
    timings = ", ".join(f"{name} {secs * 1e3:.2f} ms" for name, secs in pm.timings)
    say(f"pass timings: {timings}\n")

    for fn in (f, g):
        text = str(fn)
        back = parse(text)
        assert str(back) == text and structurally_equal(back, fn)
    say("text form: both functions print, parse back and compare structurally equal.\n")
    say(
        "\nNext: the frontend derives this IR from CPython bytecode, then the AD pass derives\n"
        "reverse-mode rules from it (see README.md, Status).\n"
    )
    say(f"demo finished in {time.perf_counter() - start:.2f} s\n")
    return 0
