"""An analysis pass: count the floating-point operations of each block; change nothing.

Run it: ``python examples/flop_count.py`` prints the table for a small recurrent function,
then runs the pass inside ``build_rrule``'s pipeline and under the pass manager.

What is counted, and in what unit.  The typed IR knows each value's dtype and rank
(``f64[:,:]``) but not its shape, so the number of flops an array operation performs is not
known before the program runs.  The pass therefore counts *operations*, by kind:

* ``scalar``: an arithmetic operator, a ``math``/``cmath`` function or a NumPy ufunc whose
  result is a float or complex scalar: one flop each;
* ``elementwise``: the same callables with a float or complex array result: about one flop
  per element (a transcendental function like ``np.tanh`` costs more, in hardware);
* ``reduction``: ``np.sum``, ``np.mean``, ``x.max()``, ``np.linalg.norm``, ``np.add.reduce``...
  with a float result: about one flop per element reduced;
* ``matmul``: ``@``, ``np.matmul``, ``np.dot``, ``x.dot``, ``np.einsum``...: ``2 m k n``
  flops for an ``(m, k) @ (k, n)`` product;
* ``linalg``: the rest of ``numpy.linalg`` (solve, cholesky, eigh...): ``O(n^3)`` each;
* ``unknown``: a call that may compute in floating point but whose types do not say (``any``,
  an array of unknown dtype), or whose callee is known only at run time.

Calls of other Python functions are not followed: their own IR has its own count (``build_rrule``
runs the pipeline on every function it derives, so the pass reports each).  Counts are static:
a block inside a loop (its ``loop`` column is the nesting depth) runs once per iteration.
"""

from __future__ import annotations

import builtins
import cmath
import math
import operator
import sys
import typing as t
from pathlib import Path

import attrs
import numpy as np

if __package__ in (None, ""):  # run as a script from a checkout: import gibbous from it
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gibbous.demo import central_difference  # noqa: E402
from gibbous.ir import types as T  # noqa: E402
from gibbous.ir.cfg import loop_depth  # noqa: E402
from gibbous.ir.core import Call, Constant, Function  # noqa: E402
from gibbous.ir.printer import format_name, function_namer  # noqa: E402
from gibbous.passes import register_pass  # noqa: E402
from gibbous.passes.rewrite import Match  # noqa: E402

KINDS = ("scalar", "elementwise", "reduction", "matmul", "linalg", "unknown")

ARITHMETIC: tuple[object, ...] = (
    *(getattr(operator, op) for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")),
    *(getattr(operator, f"i{op}") for op in ("add", "sub", "mul", "truediv", "floordiv", "pow")),
    operator.neg,
    operator.abs,
    builtins.abs,
    builtins.pow,
)
MATMUL: tuple[object, ...] = (
    operator.matmul,
    operator.imatmul,
    np.matmul,
    np.dot,
    np.ndarray.dot,
    np.inner,
    np.vdot,
    np.tensordot,
    np.einsum,
)
_REDUCING = ("sum", "prod", "mean", "std", "var", "max", "min", "cumsum", "cumprod", "trace")
REDUCTIONS: tuple[object, ...] = (
    *(getattr(np, name) for name in _REDUCING),
    *(getattr(np.ndarray, name) for name in _REDUCING),
    np.amax,
    np.amin,
    np.average,
    np.linalg.norm,
)


#: The kinds, each with the matches that take its calls, in the order they are tried.
CLASSIFIED: tuple[tuple[str, tuple[Match, ...]], ...] = (
    ("matmul", (Match(callees=MATMUL),)),
    ("reduction", (Match(callees=REDUCTIONS), Match(where=lambda fn: _is_ufunc_method(fn)))),
    ("linalg", (Match(where=lambda fn: getattr(fn, "__module__", None) == "numpy.linalg"),)),
    (
        "elementwise",
        (
            Match(callees=ARITHMETIC),
            Match(where=lambda fn: isinstance(fn, np.ufunc) or _is_math(fn)),
        ),
    ),
)


@attrs.frozen
class BlockFlops:
    """The operations of one block, by kind (see the module docstring for the unit)."""

    block: str  # as the IR prints it: ^entry, ^1
    loop: int  # how many loops contain the block
    scalar: int = 0
    elementwise: int = 0
    reduction: int = 0
    matmul: int = 0
    linalg: int = 0
    unknown: int = 0

    def counts(self) -> tuple[int, ...]:
        return tuple(getattr(self, kind) for kind in KINDS)


@attrs.frozen
class FlopReport:
    """The count for one function: a row per block, in the order the IR prints them."""

    function: str  # as the IR prints it: @loss
    blocks: tuple[BlockFlops, ...]

    def total(self) -> tuple[int, ...]:
        return tuple(sum(column) for column in zip(*(b.counts() for b in self.blocks)))

    def table(self) -> str:
        header = ("block", "loop", *KINDS)
        rows = [(b.block, str(b.loop), *map(str, b.counts())) for b in self.blocks]
        rows.append(("total", "", *map(str, self.total())))
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
        lines = [f"flop-count of {self.function} (operations per block, by kind)"]
        for row in (header, *rows):
            cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
            lines.append("  ".join(cells))
        return "\n".join(lines) + "\n"


def count_flops(f: Function) -> FlopReport:
    """Classify every call of ``f`` (``kind_of``) and count the kinds per block."""
    namer = function_namer(f)
    depth = loop_depth(f)
    rows = []
    for block in f.blocks:
        counts = dict.fromkeys(KINDS, 0)
        for call in block.calls:
            kind = kind_of(call)
            if kind is not None:
                counts[kind] += 1
        rows.append(BlockFlops(namer.block_ref(block), depth[block], **counts))
    return FlopReport(format_name("@", f.name), tuple(rows))


def kind_of(call: Call) -> str | None:
    """The kind of floating-point work ``call`` does, or None if it does none: the first
    kind whose matches (``gibbous.passes.rewrite.Match``, the patterns' own) take the call,
    then the result's type says whether it computes in floating point at all."""
    if not isinstance(call.callee, Constant):
        return "unknown"  # called through a value: anything at all
    kind = next((k for k, matches in CLASSIFIED if any(m(call) for m in matches)), None)
    if kind is None:
        return None  # conversions, indexing, constructors, calls of Python functions...
    if kind == "elementwise" and not isinstance(call.type, T.Array):
        kind = "scalar"
    floating = _floating(T.widen(call.type))
    if floating is None:
        return "unknown"
    return kind if floating else None


def _is_ufunc_method(fn: object) -> bool:
    """``np.add.reduce``, ``np.multiply.accumulate``: bound methods of a ufunc."""
    owner, name = getattr(fn, "__self__", None), getattr(fn, "__name__", None)
    return isinstance(owner, np.ufunc) and name in ("reduce", "accumulate", "reduceat")


def _is_math(fn: object) -> bool:
    module = {"math": math, "cmath": cmath}.get(getattr(fn, "__module__", None) or "")
    return module is not None and getattr(module, getattr(fn, "__name__", ""), None) is fn


def _dtype_kind(name: str) -> str:
    try:
        return np.dtype(name).kind
    except TypeError:  # "str96", "bytes8", "void16": names NumPy does not parse back
        return "?"  # (every float and complex dtype's name does)


def _floating(ty: T.Type) -> bool | None:
    """Whether values of ``ty`` are floating point: True, False, or None (the type does not
    say)."""
    match ty:
        case T.Float() | T.Complex():
            return True
        case T.Array(dtype=None):
            return None
        case T.Array(dtype=str(dtype)):
            return _dtype_kind(dtype) in "fc"
        case T.Tuple(items=items):  # divmod, np.linalg.eigh, np.linalg.slogdet
            answers = [_floating(T.widen(item)) for item in items]
            if any(a is True for a in answers):
                return True
            return None if any(a is None for a in answers) else False
        case T.Any() | T.Object():
            return None
    return False  # ints, bools, strings, None, containers of those


@register_pass
@attrs.frozen(eq=False)
class FlopCount:
    """Count, never change: ``run`` appends a ``FlopReport`` to ``reports`` and returns False.

    ``echo``: also write each report's table there as it is made (``FlopCount.to_stderr`` is
    the pass the command line can name: ``--passes ...,examples.flop_count:FlopCount.to_stderr``).
    """

    name: t.ClassVar[str] = "flop-count"
    description: t.ClassVar[str] = "analysis: count floating-point operations per block, by kind"

    reports: list[FlopReport] = attrs.field(factory=list)
    echo: t.TextIO | None = None

    @classmethod
    def to_stderr(cls) -> FlopCount:
        return cls(echo=sys.stderr)

    def run(self, f: Function) -> bool:
        report = count_flops(f)
        self.reports.append(report)
        if self.echo is not None:
            self.echo.write(report.table())
        return False


# --------------------------------------------------------------------------------------------
# Running the example


Vector = np.ndarray[t.Any, np.dtype[np.float64]]


def rnn_loss(W: Vector, U: Vector, xs: list[Vector], h: Vector) -> float:
    """A recurrent net over a sequence, in a Python loop; a squared-error loss at the end."""
    for x in xs:
        h = np.tanh(W @ h + U @ x)
    return 0.5 * float(np.sum(h * h)) / len(h)


def main() -> None:
    import gibbous
    from gibbous.inspect import code_ir
    from gibbous.passes import Pass, PassManager

    rng = np.random.default_rng(0)
    W, U = rng.standard_normal((4, 4)) / 2, rng.standard_normal((4, 3)) / 2
    xs, h = [rng.standard_normal(3) for _ in range(5)], np.zeros(4)

    ir = code_ir(rnn_loss, W, U, xs, h, stage="optimized")
    print("optimized IR of rnn_loss(W, U, xs, h):\n")
    print(_without_locations(ir))
    print(count_flops(ir).table())

    counter = FlopCount()
    pipeline: list[Pass | str] = ["fold", "dce", "cse", "simplify-cfg", counter]
    rule = gibbous.build_rrule(rnn_loss, W, U, xs, h, passes=pipeline)
    y, (_, dW, _, _, _) = gibbous.value_and_gradient(rule, rnn_loss, W, U, xs, h)
    fd = central_difference(lambda: rnn_loss(W, U, xs, h), W, (1, 2))
    print("with the pass in build_rrule's pipeline (it changes nothing, so the gradient is")
    print(f"the usual one): value {y:.9f}; dW[1, 2] gibbous {dW[1, 2]:.9f}, finite diff {fd:.9f}")
    print(f"the pass counted {len(counter.reports)} function(s): "
          + ", ".join(r.function for r in counter.reports) + "\n")

    pm = PassManager(pipeline, verify=True, timing=True)
    changed = pm.run(code_ir(rnn_loss, W, U, xs, h, stage="typed"))
    print(f"under PassManager(verify=True, timing=True): changed {changed}; the time each took:")
    for name, seconds in pm.timings:
        print(f"  {name:14} {seconds * 1e6:8.1f} us")


def _without_locations(f: Function) -> str:
    # Source locations name this file's absolute path; they are noise in a printed example.
    import re

    return re.sub(r' loc\("(?:[^"\\]|\\.)*":\d+\)', "", str(f))


if __name__ == "__main__":
    main()
