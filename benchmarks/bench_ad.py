"""Warm gradients against the primal: run ``python benchmarks/bench_ad.py [--quick]``.

The AD issue's four cases and one more, measured in one process (see benchmarks/README.md):

(a) the seed's in-place matmul, ``np.matmul(A, B, out=C); return float(C.sum())`` with C, A, B
    of shapes (16, 8), (16, 32), (32, 8), with the registered stateful rule and with the same
    rule made plain (``gibbous.rules.stateful.plain_rrule``, registered in a child context);
(b) a 100-iteration scalar loop ``s += math.sin(x[i]) * x[i]``;
(c) a tanh MLP, inputs 64x64 -> 128 (tanh) -> 10, squared loss, weights as arguments;
(d) ``np.sum(A @ B @ C)`` with 512x512 matrices;
(e) not the issue's: the Rosenbrock function ``sum(100*(x[1:]-x[:-1]**2)**2 + (1-x[:-1])**2)``
    of 10^6 elements, whose large intermediates show what buffers for fdata are worth
    (docs/design.md, "State between calls"; no target).

For each: the primal, ``gibbous.value_and_gradient(rule, f, *args)`` (the public API, which makes
zero fdata for every argument on every call), ``gibbous.prepare_gradient`` (the same, into
arrays it keeps between calls) and the bare rule (``rule(CoDual...)`` then the pullback, with
fdata made once), timed with interleaved repetitions; the NumPy memory a warm
call allocates (``gibbous.testing.allocations.measure``); and the time of an uncached
``build_rrule`` (every call builds from scratch in a fresh session).

Nothing here asserts a time; the script prints a table.  ``--profile CASE`` prints a cProfile
of that case's warm ``value_and_gradient`` instead (sorted by tottime).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import os
import pstats
import statistics
import sys
import time
import tracemalloc
import traceback
import typing as t

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gibbous  # noqa: E402
from gibbous.ir import types as T  # noqa: E402
from gibbous.rules.registry import Context, DefaultContext, Registration, lookup_rule  # noqa: E402
from gibbous.rules.stateful import plain_rrule  # noqa: E402
from gibbous.tangents.model import CoDual, zero_fdatas  # noqa: E402
from gibbous.testing.allocations import NUMPY, measure  # noqa: E402

# --- the functions measured ----------------------------------------------------------------


def seed_matmul(C, A, B):
    np.matmul(A, B, out=C)
    return float(C.sum())


def scalar_loop(x):
    s = 0.0
    for i in range(len(x)):
        s += math.sin(x[i]) * x[i]
    return s


def mlp_loss(W1, b1, W2, b2):
    h = np.tanh(MLP_X @ W1 + b1)
    out = h @ W2 + b2
    r = out - MLP_Y
    return float(np.sum(r * r))


def chain_sum(A, B, C):
    return np.sum(A @ B @ C)


def rosenbrock(x):
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


_rng = np.random.default_rng(0)
MLP_X = _rng.standard_normal((64, 64))  # a batch of 64 inputs of size 64 (data: globals)
MLP_Y = _rng.standard_normal((64, 10))


# --- expected gradients (the timings mean nothing if these are wrong) -----------------------


def expected(name: str, args: tuple[t.Any, ...]) -> tuple[np.ndarray, ...]:
    if name == "a":
        C, A, B = args
        ones = np.ones_like(C)
        return np.zeros_like(C), ones @ B.T, A.T @ ones
    if name == "b":
        (x,) = args
        return (np.cos(x) * x + np.sin(x),)
    if name == "c":
        W1, b1, W2, b2 = args
        h = np.tanh(MLP_X @ W1 + b1)
        dout = 2 * (h @ W2 + b2 - MLP_Y)
        dh = (dout @ W2.T) * (1 - h * h)
        return MLP_X.T @ dh, dh.sum(0), h.T @ dout, dout.sum(0)
    if name == "e":
        (x,) = args
        a, b = x[:-1], x[1:]
        g = np.zeros_like(x)
        g[1:] += 200 * (b - a * a)
        g[:-1] += -400 * (b - a * a) * a - 2 * (1 - a)
        return (g,)
    A, B, C = args
    ones = np.ones((A.shape[0], C.shape[1]))
    return ones @ (B @ C).T, A.T @ ones @ C.T, (A @ B).T @ ones


# --- hand-written gradients: the floor a tool could reach ----------------------------------
#
# Plain NumPy (and Python) written for each case by hand, with the same semantics as the
# rules where it matters: (a) saves and restores C and its fdata as the rule must (an argument
# is left as it was, and its fdata may hold cotangents already) and reuses its buffers; (b) records what the reverse loop needs on a list, as a
# tape would.  Each returns the value and the gradients of the arguments.


def hand_written(name: str, args: tuple[t.Any, ...]) -> t.Callable[[], object]:
    if name == "a":
        C, A, B = args
        saved, saved_dC, dC = np.empty_like(C), np.empty_like(C), np.zeros_like(C)
        dA, dB = np.zeros_like(A), np.zeros_like(B)
        ga, gb = np.empty_like(A), np.empty_like(B)

        def seed() -> object:
            # C and its fdata are saved and restored: the caller may hold cotangents in dC
            # already (fdata is accumulated into), and C is the caller's argument.
            saved[...] = C
            saved_dC[...] = dC
            np.matmul(A, B, out=C)
            dC.fill(0)
            value = float(C.sum())
            np.add(dC, 1.0, out=dC)  # the sum's pullback
            C[...] = saved
            np.matmul(dC, B.T, out=ga)
            np.matmul(A.T, dC, out=gb)
            dC[...] = saved_dC
            np.add(dA, ga, out=dA)
            np.add(dB, gb, out=dB)
            return value, dA, dB

        return seed
    if name == "b":
        (x,) = args

        def loop() -> object:
            s, tape = 0.0, []
            for i in range(len(x)):
                xi = x[i]
                si = math.sin(xi)
                tape.append((i, xi, si))
                s += si * xi
            dx = np.zeros_like(x)
            for i, xi, si in reversed(tape):
                dx[i] += math.cos(xi) * xi + si
            return s, dx

        return loop
    if name == "c":
        W1, b1, W2, b2 = args

        def mlp() -> object:
            h = np.tanh(MLP_X @ W1 + b1)
            r = h @ W2 + b2 - MLP_Y
            value = float(np.sum(r * r))
            dout = 2.0 * r
            dh = (dout @ W2.T) * (1 - h * h)
            return value, MLP_X.T @ dh, dh.sum(0), h.T @ dout, dout.sum(0)

        return mlp
    if name == "e":
        (x,) = args

        def rosen() -> object:  # fresh temporaries, as NumPy code is usually written
            a, b = x[:-1], x[1:]
            t, u = b - a * a, 1 - a
            value = float(np.sum(100 * t * t + u * u))
            g = np.zeros_like(x)
            g[1:] += 200 * t
            g[:-1] += -400 * t * a - 2 * u
            return value, g

        return rosen
    A, B, C = args

    def chain() -> object:
        T1 = A @ B
        value = np.sum(T1 @ C)
        dZ = np.ones((A.shape[0], C.shape[1]))
        dT1 = dZ @ C.T
        return value, dT1 @ B.T, A.T @ dT1, T1.T @ dZ

    return chain


# --- the cases -----------------------------------------------------------------------------


class Case(t.NamedTuple):
    name: str
    label: str
    fn: t.Callable[..., t.Any]
    make_args: t.Callable[[], tuple[t.Any, ...]]
    target: float | None  # None: no target, the case is for information
    sample: bool = True  # whether the per-instruction sampler is affordable (see README)


def _seed_args() -> tuple[t.Any, ...]:
    rng = np.random.default_rng(1)
    return np.zeros((16, 8)), rng.standard_normal((16, 32)), rng.standard_normal((32, 8))


def _loop_args() -> tuple[t.Any, ...]:
    return (np.random.default_rng(2).standard_normal(100),)


def _mlp_args() -> tuple[t.Any, ...]:
    rng = np.random.default_rng(3)
    return (
        rng.standard_normal((64, 128)) / 8,
        np.zeros(128),
        rng.standard_normal((128, 10)) / 11,
        np.zeros(10),
    )


def _rosen_args() -> tuple[t.Any, ...]:
    return (np.random.default_rng(5).uniform(-1.0, 1.0, 10**6),)


def _chain_args() -> tuple[t.Any, ...]:
    rng = np.random.default_rng(4)
    return tuple(rng.standard_normal((512, 512)) / 22 for _ in range(3))


CASES = [
    Case("a", "(a) seed: matmul(A, B, out=C)", seed_matmul, _seed_args, 3.0),
    # Sampling every instruction of 100 iterations' rules takes minutes: held only.
    Case("b", "(b) scalar loop, n=100", scalar_loop, _loop_args, 8.0, sample=False),
    Case("c", "(c) tanh MLP 64x64->128->10", mlp_loss, _mlp_args, 4.0),
    Case("d", "(d) np.sum(A @ B @ C), 512^2", chain_sum, _chain_args, 3.3),
    Case("e", "(e) Rosenbrock, 10^6", rosenbrock, _rosen_args, None),
]


def plain_context(fn: t.Callable[..., t.Any], args: tuple[t.Any, ...]) -> Context:
    """A child of DefaultContext where ``np.matmul(A, B, out=C)`` has the registered stateful
    rule made plain (no state: every call allocates), as tests/rules/test_stateful.py does."""
    types = [T.typeof(a) for a in args]
    # seed_matmul calls np.matmul(A, B, out=C): operands A, B, then the keyword C.
    registration = lookup_rule(DefaultContext, np.matmul, [types[1], types[2], types[0]], ("out",))
    if registration.kind != "stateful":
        raise RuntimeError(f"np.matmul(out=) is not stateful: {registration.describe()}")
    ctx = Context("PlainMatmulContext", parent=DefaultContext)
    plain = plain_rrule(t.cast(t.Any, registration.rule))
    ctx.register(Registration(np.matmul, registration.pattern, plain, "primitive", ctx))
    return ctx


# --- timing --------------------------------------------------------------------------------


def single(fn: t.Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(
    fns: dict[str, t.Callable[[], object]], repeat: int, sample_s: float
) -> dict[str, list[float]]:
    """Seconds per call of each function: ``repeat`` samples each, every sample as many calls
    as fill about ``sample_s``; the functions take turns (the order rotates every round), so
    all see the same machine state.  One warm-up round is not counted."""
    inner = {}
    for name, fn in fns.items():
        fn()
        once = min(single(fn) for _ in range(3))
        inner[name] = max(1, int(sample_s / max(once, 1e-9)))
    out: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(repeat + 1):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            fn, n = fns[name], inner[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            elapsed = (time.perf_counter() - start) / n
            if r:
                out[name].append(elapsed)
    return out


def fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e9:.0f} ns"


# --- what is measured per variant ----------------------------------------------------------


class Variant(t.NamedTuple):
    """One way of computing the case: the primal, or a gradient through some rule."""

    label: str
    run: t.Callable[[], object]  # one warm call, timed
    alloc: t.Callable[[t.Callable[[str], None]], object]  # the same, with a mark between passes
    is_gradient: bool


def gradient_variants(
    tag: str, rule: t.Any, fn: t.Callable[..., t.Any], args: tuple[t.Any, ...]
) -> list[Variant]:
    def api() -> object:
        return gibbous.value_and_gradient(rule, fn, *args)

    def api_alloc(mark: t.Callable[[str], None]) -> object:
        return gibbous.value_and_gradient(rule, fn, *args)  # no way in between: no mark

    prepared = gibbous.PreparedGradient(fn, rule)  # gradients into arrays it keeps

    def held() -> object:
        return prepared(*args)

    def held_alloc(mark: t.Callable[[str], None]) -> object:
        return prepared(*args)

    fdatas = zero_fdatas(fn, *args)  # made once; the rules add into them call after call
    coduals = [CoDual(x, d) for x, d in zip((fn, *args), fdatas)]
    y0, pb0 = rule(*coduals)
    seed = type(y0.primal)(1.0)
    pb0(seed)

    def bare() -> object:
        _, pullback = rule(*coduals)
        return pullback(seed)

    def bare_alloc(mark: t.Callable[[str], None]) -> object:
        _, pullback = rule(*coduals)
        mark("between")
        return pullback(seed)

    return [
        Variant(f"value_and_gradient{tag}", api, api_alloc, True),
        Variant(f"prepare_gradient{tag}", held, held_alloc, True),
        Variant(f"bare rule + pullback{tag}", bare, bare_alloc, True),
    ]


def check_gradient(case: Case, rule: t.Any, args: tuple[t.Any, ...]) -> str:
    copies = tuple(a.copy() for a in args)
    value, grads = gibbous.value_and_gradient(rule, case.fn, *copies)
    want = expected(case.name, args)
    got = grads[1:]
    if not math.isclose(float(value), float(case.fn(*(a.copy() for a in args))), rel_tol=1e-9):
        return "WRONG VALUE"
    for g, w in zip(got, want):
        if not np.allclose(np.asarray(g, dtype=float), w, rtol=1e-7, atol=1e-9):
            return "WRONG GRADIENT"
    return ""


Row = dict[str, str]


def measure_case(case: Case, quick: bool) -> list[Row]:
    args = case.make_args()
    fn = case.fn
    rows: list[Row] = []
    builds: list[tuple[str, t.Callable[[], t.Any]]] = [
        ("", lambda: gibbous.build_rrule(fn, *args))
    ]
    if case.name == "a":
        try:
            ctx = plain_context(fn, args)
        except Exception as e:
            rows.append(error_row(case, "plain rule: context", e))
        else:
            builds.append((" [plain rule]", lambda: gibbous.build_rrule(fn, *args, ctx=ctx)))

    hand = hand_written(case.name, tuple(a.copy() for a in args))
    variants = [
        Variant("primal", lambda: fn(*args), lambda mark: fn(*args), False),
        Variant("hand-written NumPy (floor)", hand, lambda mark: hand(), True),
    ]
    build_times: dict[str, list[float]] = {}
    notes: dict[str, str] = {}
    for tag, build in builds:
        try:
            rule = build()
        except Exception as e:
            rows.append(error_row(case, f"build_rrule{tag}", e))
            continue
        try:
            wrong = check_gradient(case, rule, args)
            made = gradient_variants(tag, rule, fn, args)
        except Exception as e:
            rows.append(error_row(case, f"value_and_gradient{tag}", e))
            continue
        for v in made:
            notes[v.label] = wrong
        variants += made
        n_builds = 3 if quick else 12
        build_times[tag] = [single(build) for _ in range(n_builds)]

    timings = interleaved(
        {v.label: v.run for v in variants}, 7 if quick else 41, 0.002 if quick else 0.005
    )
    primal_median = statistics.median(timings["primal"])
    primal_min = min(timings["primal"])
    for v in variants:
        samples = timings[v.label]
        med, low = statistics.median(samples), min(samples)
        try:
            if case.sample:
                alloc = measure(v.alloc)
                held = str(alloc.held["between"]) if "between" in alloc.held else "-"
                total = str(alloc.allocated)
            else:
                held, total = held_only(v.alloc), "not sampled"
        except Exception as e:  # the sampler is a test utility: report, do not stop
            held, total = "-", f"{type(e).__name__}"
        row: Row = {
            "case": case.label,
            "variant": v.label,
            "median": fmt(med),
            "min": fmt(low),
            "ratio": "",
            "target": "",
            "met": "",
            "held": held,
            "total": total,
            "build": "",
            "note": notes.get(v.label, ""),
        }
        if v.is_gradient:
            row["ratio"] = f"{med / primal_median:.2f} ({low / primal_min:.2f})"
            if case.target is not None:
                row["target"] = f"<= {case.target:g}"
                row["met"] = "yes" if med / primal_median <= case.target else "NO"
            tag = v.label[v.label.index(" [") :] if " [" in v.label else ""
            if v.label.startswith("value_and_gradient") and tag in build_times:
                b = build_times[tag]
                ok = "" if statistics.median(b) < 0.050 else " OVER"
                row["build"] = f"{statistics.median(b) * 1e3:.1f} ({min(b) * 1e3:.1f}){ok}"
        rows.append(row)
    return rows


def numpy_in_use() -> int:
    snapshot = tracemalloc.take_snapshot().filter_traces(NUMPY)
    return sum(trace.size for trace in snapshot.traces)


def held_only(run: t.Callable[[t.Callable[[str], None]], object]) -> str:
    """The NumPy memory in use at the mark, above what was in use before the (warm) call,
    without the per-instruction sampler: a temporary freed before the mark is not seen."""
    marks: dict[str, int] = {}
    tracemalloc.start(1)
    try:
        for _ in range(2):
            run(lambda name: None)
        gc.collect()
        before = numpy_in_use()
        run(lambda name: marks.__setitem__(name, numpy_in_use() - before))
    finally:
        tracemalloc.stop()
    return str(marks["between"]) if "between" in marks else "-"


def error_row(case: Case, variant: str, e: BaseException) -> Row:
    message = f"{type(e).__name__}: {e}".replace("\n", " | ")
    print(f"--- {case.label}: {variant} failed", file=sys.stderr)
    traceback.print_exception(e, file=sys.stderr)
    return {"case": case.label, "variant": variant, "median": "ERROR", "note": message}


COLUMNS = [
    ("case", "case"),
    ("variant", "variant"),
    ("median", "median"),
    ("min", "min"),
    ("ratio", "ratio med (min)"),
    ("target", "target"),
    ("met", "met?"),
    ("held", "NumPy held"),
    ("total", "NumPy total"),
    ("build", "build ms med (min)"),
    ("note", "note"),
]


def print_table(rows: list[Row], columns: list[tuple[str, str]] = COLUMNS) -> None:
    """``rows`` as aligned text: ``columns`` are (key, heading) pairs."""
    widths = {k: max(len(h), *(len(r.get(k, "")) for r in rows)) for k, h in columns}
    print("  ".join(f"{h:<{widths[k]}}" for k, h in columns).rstrip())
    print("-" * (sum(widths.values()) + 2 * len(columns)))
    for r in rows:
        print("  ".join(f"{r.get(k, ''):<{widths[k]}}" for k, _ in columns).rstrip())


def profile(name: str, quick: bool) -> None:
    case = next(c for c in CASES if c.name == name)
    args = case.make_args()
    rule = gibbous.build_rrule(case.fn, *args)
    for _ in range(3):
        gibbous.value_and_gradient(rule, case.fn, *args)
    calls = 20 if quick else 200
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        gibbous.value_and_gradient(rule, case.fn, *args)
    profiler.disable()
    print(f"cProfile of {calls} warm value_and_gradient calls of {case.label}")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--cases", default="abcde", help="which cases, e.g. 'ab'")
    parser.add_argument("--profile", metavar="CASE", help="profile one case (a to e)")
    opts = parser.parse_args()
    if opts.profile:
        profile(opts.profile, opts.quick)
        return
    rows: list[Row] = []
    for case in CASES:
        if case.name in opts.cases:
            try:
                rows += measure_case(case, opts.quick)
            except Exception as e:
                rows.append(error_row(case, "measuring", e))
    print(f"gibbous AD benchmark, Python {sys.version.split()[0]}, NumPy {np.__version__}"
          f", OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
          f"{' (quick)' if opts.quick else ''}")  # fmt: skip
    print_table(rows)
    print("ratio: of medians, value_and_gradient / primal (in brackets: of minima); NumPy bytes:")
    print("held = in use between forward and reverse, total = all NumPy allocations of a warm call")


if __name__ == "__main__":
    main()
