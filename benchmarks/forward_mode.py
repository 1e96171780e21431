"""Forward mode and Hessian-vector products beside the peers: ``python benchmarks/forward_mode.py``.

For Rosenbrock (n = 100 and 10⁶), the tanh MLP and the scalar loop of ``peers_workloads.py``,
measured side by side in one process (medians of interleaved samples, as ``peers.py``):

* jvp / primal: ``gibbous.jvp`` with a rule built once (every argument given a tangent),
  ``jax.jvp`` eager and under ``jax.jit``, ``torch.func.jvp``;
* hvp / gradient: ``gibbous.build_hvp`` (in the first argument; the others held constant)
  against gibbous's own warm gradient, beside JAX's forward-over-reverse
  ``jax.jvp(jax.grad(f), (x,), (v,))`` eager and jitted and ``torch.func.jvp`` of
  ``torch.func.grad`` — each peer's ratio to gibbous's gradient, so that one column compares
  them all.

Every tool's result is checked first: a jvp against a central difference of the primal, an
hvp against a central difference of gibbous's gradients.  The peers are optional (``pip
install -e '.[bench]'``); a missing one is "not installed".  ``--write docs/benchmarks.md``
replaces that file's section on forward mode.  Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import statistics
import subprocess
import sys
import typing as t

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import numpy as np  # noqa: E402

import gibbous  # noqa: E402
from bench_ad import fmt, interleaved  # noqa: E402
from peers import installed  # noqa: E402
from peers_workloads import MLP_X, mlp, mlp_args, rosenbrock, scalar_loop  # noqa: E402

Case = tuple[str, t.Callable[..., t.Any], tuple[t.Any, ...]]


def cases(quick: bool) -> list[Case]:
    rng = np.random.default_rng(15)
    big = 10**5 if quick else 10**6
    return [
        ("Rosenbrock, n=100", rosenbrock, (rng.standard_normal(100),)),
        (f"Rosenbrock, n={big:.0e}".replace("+0", ""), rosenbrock, (rng.standard_normal(big),)),
        ("tanh MLP, 64->128->10 (hvp in W1)", mlp, mlp_args()),
        ("scalar loop, n=100", scalar_loop, (rng.standard_normal(100),)),
    ]


def _peer_fn(f: t.Callable[..., t.Any], xp: t.Any) -> t.Callable[..., t.Any]:
    """The workload written with the array module ``xp`` (jax.numpy, torch)."""
    if f is rosenbrock:
        return lambda x: xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    if f is scalar_loop:

        def loop(x: t.Any) -> t.Any:
            s = 0.0
            for i in range(100):
                s = s + xp.sin(x[i]) * x[i]
            return s

        return loop
    X = xp.asarray(MLP_X) if xp.__name__ != "torch" else xp.tensor(MLP_X)
    return lambda W1, b1, W2, b2: xp.sum((xp.tanh(X @ W1 + b1) @ W2 + b2) ** 2)


# --- the tools -----------------------------------------------------------------------------

Run = t.Callable[[], t.Any]


def jvp_runs(
    f: t.Callable[..., t.Any], args: tuple[t.Any, ...], tangents: tuple[t.Any, ...]
) -> dict[str, Run | str]:
    out: dict[str, Run | str] = {}
    rule = gibbous.build_frule(f, *args)
    out["gibbous"] = lambda: gibbous.jvp(rule, f, args, tangents)[1]
    if installed("jax"):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        g = _peer_fn(f, jnp)
        ja, jt = tuple(map(jnp.asarray, args)), tuple(map(jnp.asarray, tangents))
        eager = lambda: jax.block_until_ready(jax.jvp(g, ja, jt)[1])  # noqa: E731
        jitted_fn = jax.jit(lambda a, d: jax.jvp(g, a, d)[1])
        out["jax.jvp (eager)"] = eager
        out["jax.jit(jax.jvp)"] = lambda: jax.block_until_ready(jitted_fn(ja, jt))
    else:
        out["jax.jvp (eager)"] = out["jax.jit(jax.jvp)"] = "not installed"
    if installed("torch"):
        import torch

        tg = _peer_fn(f, torch)
        ta = tuple(torch.tensor(a) for a in args)
        tt = tuple(torch.tensor(d) for d in tangents)
        out["torch.func.jvp"] = lambda: torch.func.jvp(tg, ta, tt)[1]
    else:
        out["torch.func.jvp"] = "not installed"
    return out


def hvp_runs(f: t.Callable[..., t.Any], args: tuple[t.Any, ...], v: t.Any) -> dict[str, Run | str]:
    x, rest = args[0], args[1:]
    out: dict[str, Run | str] = {}
    product = gibbous.build_hvp(f, x, *rest)
    out["gibbous"] = lambda: product(x, v, *rest)
    if installed("jax"):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        g = _peer_fn(f, jnp)
        jrest = tuple(map(jnp.asarray, rest))
        jx, jv = jnp.asarray(x), jnp.asarray(v)

        def hv(a: t.Any, d: t.Any) -> t.Any:
            return jax.jvp(jax.grad(lambda y: g(y, *jrest)), (a,), (d,))[1]

        jitted = jax.jit(hv)
        out["jax forward-over-reverse (eager)"] = lambda: jax.block_until_ready(hv(jx, jv))
        out["jax.jit(forward-over-reverse)"] = lambda: jax.block_until_ready(jitted(jx, jv))
    else:
        out["jax forward-over-reverse (eager)"] = "not installed"
        out["jax.jit(forward-over-reverse)"] = "not installed"
    if installed("torch"):
        import torch

        tg = _peer_fn(f, torch)
        trest = tuple(torch.tensor(a) for a in rest)
        tx, tv = torch.tensor(x), torch.tensor(v)
        grad = torch.func.grad(lambda y: tg(y, *trest))
        out["torch.func.jvp(torch.func.grad)"] = lambda: torch.func.jvp(grad, (tx,), (tv,))[1]
    else:
        out["torch.func.jvp(torch.func.grad)"] = "not installed"
    return out


# --- checks --------------------------------------------------------------------------------


def _array(v: t.Any) -> np.ndarray:
    return np.asarray(v.detach().numpy() if hasattr(v, "detach") else v, dtype=float)


def checked(runs: dict[str, Run | str], expected: t.Any, scale: float) -> dict[str, Run | str]:
    out: dict[str, Run | str] = {}
    for name, run in runs.items():
        if isinstance(run, str):
            out[name] = run
            continue
        try:
            got = _array(run())
        except Exception as e:  # a peer that fails says so
            out[name] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
            continue
        if not np.allclose(got, expected, rtol=1e-4, atol=1e-6 * scale):
            out[name] = "wrong result (not timed)"
            continue
        out[name] = run
    return out


def _gradient(rule: t.Any, f: t.Callable[..., t.Any], args: tuple[t.Any, ...]) -> t.Any:
    return gibbous.value_and_gradient(rule, f, *args)[1][1]


# --- the table -----------------------------------------------------------------------------


def measure(quick: bool) -> list[str]:
    repeat, sample = (5, 0.02) if quick else (15, 0.05)
    lines = [
        "| workload | what | tool | median | ratio |",
        "|---|---|---|---|---|",
    ]
    rng = np.random.default_rng(16)
    for title, f, args in cases(quick):
        tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
        h = 1e-6
        plus = f(*(a + h * d for a, d in zip(args, tangents)))
        minus = f(*(a - h * d for a, d in zip(args, tangents)))
        fd = (plus - minus) / (2 * h)
        jvps = checked(jvp_runs(f, args, tangents), fd, abs(float(fd)) + 1)
        rule = gibbous.build_rrule(f, *args)
        v = tangents[0]
        e = 1e-5
        hv_fd = (
            _gradient(rule, f, (args[0] + e * v, *args[1:]))
            - _gradient(rule, f, (args[0] - e * v, *args[1:]))
        ) / (2 * e)
        hvps = checked(hvp_runs(f, args, v), hv_fd, float(np.max(np.abs(hv_fd))) + 1)
        timed: dict[str, Run] = {
            "primal": lambda: f(*args),
            "gradient": lambda: _gradient(rule, f, args),
        }
        timed.update({f"jvp {k}": r for k, r in jvps.items() if not isinstance(r, str)})
        timed.update({f"hvp {k}": r for k, r in hvps.items() if not isinstance(r, str)})
        samples = interleaved(timed, repeat, sample)
        med = {k: statistics.median(s) for k, s in samples.items()}
        print(f"{title}: primal {fmt(med['primal'])}, gibbous gradient {fmt(med['gradient'])}")
        lines.append(f"| {title} | primal | NumPy | {fmt(med['primal'])} | 1 |")
        for kind, runs, base, base_name in (
            ("jvp / primal", jvps, med["primal"], "primal"),
            ("hvp / gibbous gradient", hvps, med["gradient"], "gradient"),
        ):
            if base_name == "gradient":
                lines.append(f"|  | gradient | gibbous | {fmt(med['gradient'])} | 1 |")
            for name, run in runs.items():
                key = f"{kind.split()[0]} {name}"
                if isinstance(run, str):
                    print(f"  {kind:24s} {name:36s} {run}")
                    lines.append(f"|  | {kind} | {name} |  | {run} |")
                    continue
                ratio = med[key] / base
                print(f"  {kind:24s} {name:36s} {fmt(med[key]):>10s}  {ratio:6.2f}")
                lines.append(f"|  | {kind} | {name} | {fmt(med[key])} | {ratio:.2f} |")
    return lines


HEADING = "## Forward mode and Hessian-vector products (#15)"


def write(path: str, lines: list[str]) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    versions = ", ".join(
        f"{p} {importlib.metadata.version(p)}" for p in ("numpy", "jax", "torch") if installed(p)
    )
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    section = "\n".join([
        HEADING,
        "",
        f"Python {sys.version.split()[0]}, {versions}; {when}, commit `{commit}`, "
        f"OPENBLAS_NUM_THREADS={threads}, load average {load:.1f}.  Medians of interleaved "
        "samples in one process; every result checked first (`benchmarks/forward_mode.py`).",
        "",
        *lines,
        "",
        "Regenerate: `OPENBLAS_NUM_THREADS=1 python benchmarks/forward_mode.py --write "
        "docs/benchmarks.md`.",
        "",
    ])  # fmt: skip
    text = open(path).read()
    if HEADING in text:
        start = text.index(HEADING)
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + section + (text[end + 1 :] if end != -1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as out:
        out.write(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples; 10^5")
    parser.add_argument("--write", metavar="FILE", help="replace FILE's forward-mode section")
    options = parser.parse_args()
    threads = os.environ.get("OPENBLAS_NUM_THREADS")
    if threads and installed("torch"):
        import torch

        torch.set_num_threads(int(threads))
    lines = measure(options.quick)
    if options.write:
        write(options.write, lines)
        print(f"wrote the forward-mode section of {options.write}")


if __name__ == "__main__":
    main()
