"""What gibbous and JAX differentiate of NumPy's and SciPy's public API, side by side, on the
scan's samples: run ``python benchmarks/coverage_peers.py [--modules numpy,scipy.special]
[--page docs/supported.md]`` in an environment with JAX (the ``bench`` extra).

For every public callable the scan (``gibbous.audit.scan``) samples, the same loss (the
weighted sum of its result, in the same argument) is written with JAX's function of the same
name (``jax.numpy.X`` for ``numpy.X``, ``jax.scipy.special.X`` for ``scipy.special.X``,
``jax.scipy.stats.norm.logpdf`` for ``scipy.stats.norm.logpdf``, ...), in float64, and
differentiated by ``jax.grad`` (reverse), ``jax.jvp`` (forward) and ``jax.jvp`` of
``jax.grad`` (hvp), each against the central differences of the NumPy / SciPy loss.  A
callable JAX does not have counts as absent; one whose JAX call fails is refused.  gibbous's
verdicts are the scan's, run here (minutes), or read from a page it wrote (``--page``).
docs/benchmarks.md, "Coverage against JAX", has the figures.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import typing as t
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gibbous.audit import scan, supported  # noqa: E402

_JAX_MODULES = {
    "numpy": "jax.numpy", "numpy.linalg": "jax.numpy.linalg", "numpy.fft": "jax.numpy.fft",
    "numpy.polynomial.polynomial": None, "scipy.special": "jax.scipy.special",
    "scipy.linalg": "jax.scipy.linalg", "scipy.stats": "jax.scipy.stats",
    "scipy.signal": "jax.scipy.signal", "scipy.interpolate": "jax.scipy.interpolate",
    "scipy.integrate": "jax.scipy.integrate",
}  # fmt: skip
_GOOD = ("yes", "zero")


def jax_twin(name: str) -> t.Callable[..., t.Any] | None:
    """JAX's callable of the same public name, or ``None``."""
    module = scan.module_of(name)
    target = _JAX_MODULES.get(module)
    if target is None:
        return None
    obj: t.Any = importlib.import_module(target)
    for part in name[len(module) + 1 :].split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return t.cast(t.Callable[..., t.Any], obj) if callable(obj) else None


def jax_row(name: str, fn: t.Callable[..., t.Any]) -> tuple[str, str, str] | None:
    """JAX's verdicts (reverse, forward, hvp) on the scan's sample of ``fn``; ``None`` if
    the scan has no sample; ``("absent",) * 3`` if JAX has no such callable."""
    import jax
    import jax.numpy as jnp

    found = scan.sample(fn)
    if found is None:
        return None
    twin = jax_twin(name)
    if twin is None:
        return ("absent",) * 3
    reference = found.loss()
    given = found.args[found.at]
    x: t.Any = np.array(given, dtype=float) if isinstance(given, np.ndarray) else float(t.cast(float, given))
    v: t.Any = np.cos(np.arange(np.size(x)) * 1.7 + 0.3).reshape(np.shape(x))
    v = v if isinstance(x, np.ndarray) else 0.9
    before, after = found.args[: found.at], found.args[found.at + 1 :]
    w, index = found.weights, found.index

    def loss(u: t.Any) -> t.Any:
        y = twin(*before, u, *after)
        return jnp.sum(jnp.real(y if index is None else y[index]) * w)

    with scan._quiet():
        try:
            expected = scan._central(reference, x, v, 1e-4)
        except Exception:
            return ("skipped",) * 3
        verdicts = []
        for mode in ("reverse", "forward", "hvp"):
            try:
                with scan._limit(30):
                    verdicts.append(_check(mode, loss, reference, x, v, expected, jax))
            except scan._Timeout:
                verdicts.append("skipped")
            except Exception:
                verdicts.append("refused")
    return verdicts[0], verdicts[1], verdicts[2]


def _check(mode: str, loss: t.Any, reference: t.Any, x: t.Any, v: t.Any, expected: float, jax: t.Any) -> str:
    if mode == "reverse":
        return scan._verdict(float(np.sum(np.asarray(jax.grad(loss)(x)) * v)), expected)
    if mode == "forward":
        return scan._verdict(float(jax.jvp(loss, (x,), (v,))[1]), expected)
    h = np.asarray(jax.jvp(jax.grad(loss), (x,), (v,))[1])
    import gibbous  # (the gradient's differences: the same reference as the scan's hvp)

    grad = gibbous.grad(reference)
    try:
        d = (np.asarray(grad(x + 1e-4 * v)) - np.asarray(grad(x - 1e-4 * v))) / 2e-4
    except Exception:
        fd = jax.grad(loss)
        d = (np.asarray(fd(x + 1e-4 * v)) - np.asarray(fd(x - 1e-4 * v))) / 2e-4
    if not np.all(np.isfinite(d)):
        return "skipped"
    return "yes" if np.allclose(h, d, rtol=1e-3, atol=1e-5) else "wrong"


def _known(known: dict[str, t.Any], name: str) -> tuple[str, str, str] | None:
    found = known[name]
    return None if found is None else (found[0], found[1], found[2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--modules", default=",".join(scan.MODULES))
    parser.add_argument("--page", help="read gibbous's verdicts from this page, do not scan")
    parser.add_argument("--jax-cache", help="JAX's verdicts: read from this JSON file if it "
                        "exists, else written there")
    parser.add_argument("--jax-only", action="store_true", help="JAX's verdicts alone")
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    modules = args.modules.split(",")
    ours: dict[str, scan.Row] = {}
    if args.page:
        ours = {r.name: r for r in supported.parse(Path(args.page).read_text(encoding="utf-8"))}
    cache = Path(args.jax_cache) if args.jax_cache else None
    known: dict[str, t.Any] = json.loads(cache.read_text()) if cache and cache.exists() else {}
    print("| module | sampled | gibbous reverse | forward | hvp | JAX reverse | forward | hvp | JAX absent |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    totals = np.zeros(8, dtype=int)
    for module in modules:
        counts = np.zeros(8, dtype=int)
        for name, fn in scan.public_callables(module):
            f = t.cast(t.Callable[..., t.Any], fn)
            theirs = _known(known, name) if name in known else jax_row(name, f)
            known[name] = theirs
            if theirs is None:
                continue
            row = ours.get(name) or (None if args.jax_only else scan.scan_one(name, f))
            mine = ("skipped",) * 3 if row is None else (row.reverse, row.forward, row.hvp)
            counts += [1, *(m in _GOOD for m in mine), *(j in _GOOD for j in theirs), theirs[0] == "absent"]
        totals += counts
        print(f"| {module} | " + " | ".join(map(str, counts)) + " |", flush=True)
    print("| **total** | " + " | ".join(f"**{c}**" for c in totals) + " |")
    if cache is not None:
        cache.write_text(json.dumps(known))
    return 0


if __name__ == "__main__":
    sys.exit(main())
