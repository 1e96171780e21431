"""gibbous against its peers: run ``python benchmarks/peers.py [--quick] [--workloads 1,3]``.

The workloads of ``peers_workloads.py``, each measured side by side in one process as warm
gradient time / plain NumPy primal time (ratio of medians of interleaved samples; see
benchmarks/README.md) for: gibbous (``value_and_gradient`` with a rule built once), the
hand-written NumPy gradient (the floor), autograd, PyTorch eager (float64, ``.backward()``),
JAX eager (``jax.value_and_grad`` without jit, x64) and ``jax.jit(jax.value_and_grad(f))``.
Every tool's gradient is checked against central finite differences before it is timed.  A
tool that cannot express a workload says why; one whose package is missing says "not
installed"; one that fails says its error's first line.  Also: the time to a first gradient
(a fresh ``build_rrule`` and its first call; for ``jax.jit``, tracing, compilation and the
first call).  ``--write docs/benchmarks.md`` replaces that file's section on peers.

The peers are optional (``pip install -e '.[bench]'``); nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import os
import statistics
import subprocess
import sys
import time
import traceback
import typing as t

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import numpy as np  # noqa: E402

import gibbous  # noqa: E402
from bench_ad import fmt, interleaved, print_table  # noqa: E402
from peers_workloads import WORKLOADS, Args, Result, Workload  # noqa: E402

# --- the tools -----------------------------------------------------------------------------


class Prepared(t.NamedTuple):
    run: t.Callable[[], object]  # one warm gradient, timed
    result: t.Callable[[object], Result]  # what ``run`` returned, as floats and NumPy arrays


class Tool(t.NamedTuple):
    name: str
    package: str | None  # the distribution that must be installed
    prepare: t.Callable[[Workload, Args], Prepared]
    # How many times "first gradient" (prepare + the first run) is timed: 0, not reported.
    first_samples: int = 0


def _gibbous_result(w: Workload) -> t.Callable[[object], Result]:
    def result(out: t.Any) -> Result:
        value, grads = out
        return float(value), tuple(np.asarray(grads[1 + i], dtype=float) for i in w.wrt)

    return result


def prepare_gibbous(w: Workload, args: Args) -> Prepared:
    rule = gibbous.build_rrule(w.fn, *args)
    return Prepared(lambda: gibbous.value_and_gradient(rule, w.fn, *args), _gibbous_result(w))


def prepare_floor(w: Workload, args: Args) -> Prepared:
    return Prepared(w.hand(args), lambda out: t.cast(Result, out))


def _as_result(out: t.Any) -> Result:
    value, grads = out
    return float(value), tuple(np.asarray(g, dtype=float) for g in grads)


def prepare_autograd(w: Workload, args: Args) -> Prepared:
    import autograd
    import autograd.numpy as anp

    assert w.peer is not None
    value_and_grad = autograd.value_and_grad(w.peer(anp), w.wrt)
    return Prepared(lambda: value_and_grad(*args), _as_result)


def prepare_torch(w: Workload, args: Args) -> Prepared:
    import torch

    assert w.peer is not None
    loss = w.peer(torch)
    tensors = [torch.from_numpy(a.copy()).requires_grad_(i in w.wrt) for i, a in enumerate(args)]
    leaves = [tensors[i] for i in w.wrt]

    def run() -> object:
        for leaf in leaves:
            leaf.grad = None
        y = loss(*tensors)
        y.backward()
        return y, [leaf.grad for leaf in leaves]

    def result(out: t.Any) -> Result:
        y, grads = out
        return float(y.detach()), tuple(g.numpy() for g in grads)

    return Prepared(run, result)


def _jax() -> tuple[t.Any, t.Any]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def _jax_gradient(w: Workload, args: Args, jit: bool) -> tuple[t.Callable[..., t.Any], list[t.Any]]:
    jax, jnp = _jax()
    assert w.peer is not None
    value_and_grad = jax.value_and_grad(w.peer(jnp), argnums=w.wrt)
    return (jax.jit(value_and_grad) if jit else value_and_grad), [jnp.asarray(a) for a in args]


def prepare_jax(w: Workload, args: Args, jit: bool = False) -> Prepared:
    jax, _ = _jax()
    gradient, jargs = _jax_gradient(w, args, jit)
    return Prepared(lambda: jax.block_until_ready(gradient(*jargs)), _as_result)


# First gradients: ``build_rrule`` keeps no cache across calls (each is a new session), so
# every prepare is a build from scratch; every jax.jit prepare jits a new loss function
# (tracing, compilation, first call), slow enough to be timed once.
GIBBOUS = Tool("gibbous", None, prepare_gibbous, 3)
FLOOR = Tool("hand-written NumPy (floor)", None, prepare_floor)
TOOLS = [
    GIBBOUS,
    FLOOR,
    Tool("autograd", "autograd", prepare_autograd),
    Tool("PyTorch eager", "torch", prepare_torch),
    Tool("JAX eager", "jax", prepare_jax),
    Tool("jax.jit", "jax", lambda w, a: prepare_jax(w, a, jit=True), 1),
]


def installed(package: str) -> bool:
    try:
        importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def cannot(tool: Tool, w: Workload, slow: bool = False) -> str | None:
    """Why ``tool`` is not run on ``w`` (None: it is)."""
    if tool.package is not None and not installed(tool.package):
        return "not installed"
    if tool.name in w.cannot:
        return w.cannot[tool.name]
    if tool.name in w.slow and not slow:
        return w.slow[tool.name]
    if tool.package is not None and w.peer is None:
        return "cannot express"
    return None


# --- checking gradients --------------------------------------------------------------------

class Probe(t.NamedTuple):
    arg: int  # which argument
    index: int  # which element of it (flat)
    difference: float  # the central difference there
    rounding: float  # its rounding error, from the values' magnitude (large sums)



def finite_differences(w: Workload, args: Args, per_arg: int = 12) -> list[Probe]:
    """Central differences of ``w.fn``: every element of a differentiated argument of at most
    128 elements, else ``per_arg`` of them (the first, the last and random ones)."""
    rng = np.random.default_rng(0)
    probes = []
    for i in w.wrt:
        size = args[i].size
        picks = range(size) if size <= 128 else {0, size - 1, *rng.integers(0, size, per_arg)}
        for k in sorted(picks):
            v = args[i].flat[k]
            h = 1e-6 * max(1.0, abs(v))
            sides = []
            for step in (h, -h):
                copies = [a.copy() for a in args]
                copies[i].flat[k] = v + step
                sides.append(float(w.fn(*copies)))
            difference = (sides[0] - sides[1]) / (2 * h)
            probes.append(Probe(i, k, difference, 1e-14 * (abs(sides[0]) + abs(sides[1])) / h))
    return probes


def check(w: Workload, args: Args, probes: list[Probe], result: Result) -> str:
    """"" if ``result`` matches the primal's value and the central differences, else why not."""
    value, grads = result
    want = float(w.fn(*(a.copy() for a in args)))
    if not np.isclose(value, want, rtol=1e-8, atol=1e-12):
        return f"WRONG VALUE: {value!r}, the primal gives {want!r}"
    if len(grads) != len(w.wrt):
        return f"WRONG GRADIENT: {len(grads)} gradients for {len(w.wrt)} arguments"
    position = {i: n for n, i in enumerate(w.wrt)}
    for p in probes:
        got = float(np.asarray(grads[position[p.arg]]).flat[p.index])
        if abs(got - p.difference) > 1e-6 * max(1.0, abs(p.difference)) + p.rounding:
            return (
                f"WRONG GRADIENT: argument {p.arg}, element {p.index}: {got!r}, "
                f"differences give {p.difference!r}"
            )
    return ""


# --- measuring -----------------------------------------------------------------------------

Row = dict[str, str]
COLUMNS = [
    ("workload", "workload"),
    ("tool", "tool"),
    ("median", "median"),
    ("min", "min"),
    ("ratio", "ratio med (min)"),
    ("first", "first gradient"),
    ("note", "note"),
]


def first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def measure(w: Workload, quick: bool, slow: bool = False) -> list[Row]:
    args = w.make_args()
    probes = finite_differences(w, args)
    rows: dict[str, Row] = {"primal": {"workload": w.key, "tool": "primal (NumPy)"}}
    runs: dict[str, t.Callable[[], object]] = {"primal": lambda: w.fn(*args)}
    for tool in TOOLS:
        row = rows[tool.name] = {"workload": w.key, "tool": tool.name}
        reason = cannot(tool, w, slow)
        if reason is not None:
            row["note"] = reason
            continue
        try:
            firsts = []
            for _ in range(max(1, tool.first_samples if not quick else 1)):
                start = time.perf_counter()
                prepared = tool.prepare(w, args)
                out = prepared.run()
                firsts.append(time.perf_counter() - start)
            if tool.first_samples:
                first = statistics.median(firsts)
                row["first"] = f"{first:.1f} s" if first >= 1 else fmt(first)
            wrong = check(w, args, probes, prepared.result(out))
        except Exception as e:
            print(f"--- {w.key}: {tool.name} failed", file=sys.stderr)
            traceback.print_exception(e, file=sys.stderr)
            row["note"] = f"failed: {first_line(e)}"
            continue
        if wrong:
            row["note"] = wrong  # a wrong gradient is not timed
        else:
            runs[tool.name] = prepared.run
    timings = interleaved(runs, 5 if quick else 21, 0.002 if quick else 0.005)
    primal_med, primal_min = statistics.median(timings["primal"]), min(timings["primal"])
    for name, samples in timings.items():
        med, low = statistics.median(samples), min(samples)
        rows[name].update(median=fmt(med), min=fmt(low))
        if name != "primal":
            rows[name]["ratio"] = f"{med / primal_med:.2f} ({low / primal_min:.2f})"
    return list(rows.values())


# --- the report ----------------------------------------------------------------------------


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


BLAS = "OPENBLAS_NUM_THREADS"


def facts(quick: bool) -> str:
    try:
        commit = subprocess.run(
            ["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    torch_threads = ""
    if installed("torch"):
        torch_threads = f" (threads: {importlib.import_module('torch').get_num_threads()})"
    return (
        f"Python {sys.version.split()[0]}, NumPy {np.__version__}, "
        f"torch {version('torch')}{torch_threads}, jax {version('jax')}, "
        f"autograd {version('autograd')}; {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} "
        f"UTC, commit `{commit}`, OPENBLAS_NUM_THREADS={os.environ.get(BLAS, 'unset')}"
        f", load average {os.getloadavg()[0]:.1f}{', --quick' if quick else ''}"
    )


EXPLANATION = """\
Each workload is written once in plain NumPy (the primal, and what gibbous differentiates), once
as a hand-written NumPy gradient (the floor) and in each peer's idiom
(`benchmarks/peers_workloads.py`).  *ratio*: median of the tool's warm value-and-gradient call /
median of the primal (in brackets: min / min), from interleaved samples in one process.  Every
gradient is checked against central finite differences before it is timed.  *first gradient*:
for gibbous, a fresh `build_rrule` and its first call (median of 3, in a process that has built
other rules); for `jax.jit`, a new jit's tracing, compilation and first call (once).  Torch
runs with `torch.set_num_threads` set to `OPENBLAS_NUM_THREADS` when that is set."""

REGENERATE = (
    "Regenerate (peers: `pip install -e '.[bench]'`): "
    "`OPENBLAS_NUM_THREADS=1 python benchmarks/peers.py --write docs/benchmarks.md`."
)
HEADING = "## Peers (`benchmarks/peers.py`)"


def markdown(rows: list[Row], header: str) -> str:
    labels = {w.key: f"{w.key}: {w.label}" for w in WORKLOADS}

    def cell(row: Row, key: str) -> str:
        if key == "workload":  # the workload's label on its first row
            return labels.get(row[key], row[key]) if row["tool"].startswith("primal") else ""
        return row.get(key, "").replace("|", "\\|")

    lines = [HEADING, "", header + ".", "", EXPLANATION, ""]
    lines.append("| " + " | ".join(h for _, h in COLUMNS) + " |")
    lines.append("|" + "---|" * len(COLUMNS))
    lines += ["| " + " | ".join(cell(r, k) for k, _ in COLUMNS) + " |" for r in rows]
    return "\n".join(lines + ["", REGENERATE, ""])


def write_section(path: str, section: str) -> None:
    """Replace the section under ``HEADING`` (up to the next heading: a ``###`` subsection
    after it, written by hand, stays) or append it."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    start = next((n for n, line in enumerate(lines) if line.rstrip() == HEADING), None)
    if start is None:
        text = "".join(lines).rstrip("\n") + "\n\n" + section
    else:
        after = (n for n in range(start + 1, len(lines)) if lines[n].startswith("#"))
        end = next(after, len(lines))
        rest = "".join(lines[end:])
        text = "".join(lines[:start]) + section + ("\n" + rest if rest else "")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def selected(spec: str | None) -> list[Workload]:
    if spec is None:
        return WORKLOADS
    numbers = {int(s) for s in spec.split(",") if s.strip()}
    return [w for w in WORKLOADS if w.number in numbers]


def _warm_up(x: np.ndarray) -> float:
    return float(np.sum(np.sin(x) * x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--workloads", help="which workloads, e.g. '1,3' (default: all)")
    parser.add_argument("--slow", action="store_true", help="also what takes minutes to compile")
    parser.add_argument("--write", metavar="MD", help="replace the peers section of this file")
    opts = parser.parse_args()
    threads = os.environ.get(BLAS)
    if threads and installed("torch"):
        importlib.import_module("torch").set_num_threads(int(threads))
    # The process's first build pays gibbous's one-time setup: not any workload's first gradient.
    gibbous.value_and_gradient(gibbous.build_rrule(_warm_up, np.ones(2)), _warm_up, np.ones(2))
    rows: list[Row] = []
    for w in selected(opts.workloads):
        start = time.perf_counter()
        try:
            rows += measure(w, opts.quick, opts.slow)
        except Exception as e:  # a failure of the script itself, not of a tool
            traceback.print_exception(e, file=sys.stderr)
            rows.append({"workload": w.key, "tool": "-", "note": f"failed: {first_line(e)}"})
        print(f"{w.key}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    header = facts(opts.quick)
    print(header)
    print_table(rows, COLUMNS)
    print("ratio: of medians, gradient / primal (in brackets: of minima)")
    for w in selected(opts.workloads):
        print(f"{w.key}: {w.label}")
    if opts.write:
        write_section(opts.write, markdown(rows, header))
        print(f"wrote the peers section of {opts.write}")


if __name__ == "__main__":
    main()
