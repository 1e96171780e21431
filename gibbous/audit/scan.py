"""The scan of NumPy's and SciPy's public callables (issue 31, points 6 and 7): each called
with typical float arguments inside a one-line loss, and differentiated in reverse mode,
forward mode and under hvp, each against central differences.

A callable's *sample* is the first of a fixed list of argument patterns (an array, a matrix,
two arrays, a number, ...) for which the plain call returns finite floats; the loss is the
weighted sum of (the real part of) that result, or of its first float item, as a function of
the first float argument.  Each mode ends in one verdict:

* ``yes``: the derivative matches central differences (Richardson-extrapolated);
* ``zero``: no derivative reaches the result (an index, a count, a sort order): a zero
  gradient, which central differences confirm;
* ``wrong``: a derivative that does not match: a bug;
* ``refused``: a gibbous exception (``GibbousError``) saying what is not supported;
* ``bare``: a refusal that is still a bare ``NotImplementedError`` (issue 32: one family);
* ``internal``: any other exception, where the plain call ran: gibbous's own error.

``python -m gibbous rules --supported [MODULE]`` prints the table; ``docs/supported.md`` is
written from it (``write_table``), and tests/test_scan.py checks it is current and that no
callable ends in ``internal`` or ``wrong``.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import types
import typing as t
import warnings

import attrs
import numpy as np

MODULES = (
    "numpy", "numpy.linalg", "numpy.fft", "numpy.polynomial.polynomial", "scipy.special",
    "scipy.linalg", "scipy.stats", "scipy.signal", "scipy.interpolate", "scipy.integrate",
)  # fmt: skip

# Names whose call does something besides computing (files, printing, global state, tests),
# or that take code, not numbers.
_SKIPPED = frozenset("""
    save savez savez_compressed savetxt load loadtxt genfromtxt fromfile fromregex tofile
    set_printoptions get_printoptions printoptions setbufsize getbufsize seterr geterr
    seterrcall geterrcall errstate show_config show_runtime info test get_include
    set_string_function frompyfunc vectorize piecewise apply_along_axis apply_over_axes
    fromfunction nested_iters iterable typename may_share_memory shares_memory byte_bounds
    deprecate deprecate_with_doc lookfor safe_eval source who disp add_newdoc
    add_docstring add_newdoc_ufunc busday_count busday_offset is_busday datetime_as_string
    datetime_data quad dblquad tplquad nquad quad_vec fixed_quad romberg solve_ivp odeint
    solve_bvp ode complex_ode newton_cotes lebedev_rule
""".split())
_TIMEOUT = 20  # seconds per callable, its three modes together

Verdict = t.Literal["yes", "zero", "wrong", "refused", "bare", "internal", "skipped"]


@attrs.frozen
class Row:
    """One callable's verdicts (``how``: the sample call, or why there is none)."""

    name: str
    how: str
    reverse: Verdict
    forward: Verdict
    hvp: Verdict
    why: str = ""  # (the first refusal's first line, for the table)


def public_callables(module: str) -> list[tuple[str, object]]:
    """``(public name, callable)`` of a module: functions, ufuncs and dispatchers (not classes,
    modules or constants), each once, by name."""
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    found = []
    for n in sorted(set(names)):
        if n.startswith("_") or n in _SKIPPED:
            continue
        try:
            value = getattr(mod, n)
        except AttributeError:
            continue
        if isinstance(value, (type, types.ModuleType)) or not callable(value):
            continue
        found.append((f"{module}.{n}", value))
    return found


_X = np.array([0.21, 0.35, 0.42, 0.58, 0.66, 0.83])
_M = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])
_S = 0.6
# (arguments, the index of the one differentiated, its text)
_PATTERNS: list[tuple[tuple[object, ...], int, str]] = [
    ((_X,), 0, "f(x)"),
    ((_M,), 0, "f(A)"),
    ((_X, _X[::-1].copy()), 0, "f(x, y)"),
    ((_M, _M.T.copy()), 0, "f(A, B)"),
    ((_M, _X[:3]), 0, "f(A, b)"),
    ((_S,), 0, "f(s)"),
    ((_S, 0.3), 0, "f(s, t)"),
    ((1.5, _X), 1, "f(1.5, x)"),
    ((2, _X), 1, "f(2, x)"),
    ((_X, 2), 0, "f(x, 2)"),
    ((_X, 0.3), 0, "f(x, 0.3)"),
    ((_S, 0.3, 0.7), 0, "f(s, t, u)"),
    ((_X, _X[::-1].copy(), _X * 0.5), 0, "f(x, y, z)"),
]


def _float_part(y: object) -> tuple[int | None, np.ndarray] | None:
    """The float array the loss reads from a result: itself, or its first float item."""
    for index, item in [(None, y)] + (list(enumerate(y)) if isinstance(y, tuple) else []):
        a = np.asarray(item) if isinstance(item, (np.ndarray, float, complex, np.inexact)) else None
        if a is not None and a.dtype.kind in "fc" and a.size and np.all(np.isfinite(a)):
            return index, a
    return None


@attrs.frozen
class Sample:
    """``loss(v)``: the weighted sum of ``fn(*args)`` with ``v`` as argument ``at``."""

    fn: t.Callable[..., t.Any]
    args: tuple[object, ...]
    at: int
    index: int | None
    weights: np.ndarray
    text: str

    def loss(self) -> t.Callable[[t.Any], t.Any]:
        fn, args, at, index, w = self.fn, self.args, self.at, self.index, self.weights
        before, after = args[:at], args[at + 1 :]
        if index is None:
            return lambda v: np.sum(np.real(fn(*before, v, *after)) * w)
        return lambda v: np.sum(np.real(fn(*before, v, *after)[index]) * w)


def sample(fn: t.Callable[..., t.Any]) -> Sample | None:
    """The first pattern whose plain call gives finite floats."""
    for pattern, at, text in _PATTERNS:
        args = _fresh(pattern)  # (a function may write into its arguments: np.put, np.place)
        try:
            with _quiet():
                y = fn(*args)
        except Exception:
            continue
        part = _float_part(y)
        if part is None:
            continue
        index, a = part
        weights = np.cos(np.arange(a.size) + 0.5).reshape(a.shape)
        return Sample(fn, _fresh(pattern), at, index, weights, text)
    return None


def _fresh(args: tuple[object, ...]) -> tuple[object, ...]:
    return tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in args)


@contextlib.contextmanager
def _quiet() -> t.Iterator[None]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _limit(seconds: int) -> t.Iterator[None]:
    """Raise ``_Timeout`` after ``seconds`` (SIGALRM, where there is one: the main thread)."""
    def ring(signum: int, frame: object) -> None:
        raise _Timeout

    try:
        old = signal.signal(signal.SIGALRM, ring)
    except (ValueError, AttributeError):  # (not the main thread, or no SIGALRM)
        yield
        return
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _central(f: t.Callable[[t.Any], t.Any], x: t.Any, v: t.Any, h: float) -> float:
    d1 = (float(f(x + h * v)) - float(f(x - h * v))) / (2 * h)
    d2 = (float(f(x + h / 2 * v)) - float(f(x - h / 2 * v))) / h
    return (4 * d2 - d1) / 3


def _verdict(got: float, expected: float) -> Verdict:
    if not (np.isfinite(expected) and np.isfinite(got)):
        return "skipped"  # (not differentiable at the sample: sqrt at 0 inside np.kaiser)
    close = abs(got - expected) <= 1e-4 * max(1.0, abs(expected))
    if not close:
        return "wrong"
    return "zero" if got == 0.0 and abs(expected) < 1e-9 else "yes"


def _classify(e: BaseException) -> tuple[Verdict, str]:
    from gibbous.ir.exceptions import GibbousError

    first = str(e).split("\n", 1)[0][:160]
    if isinstance(e, GibbousError):
        return "refused", f"{type(e).__name__}: {first}"
    if isinstance(e, NotImplementedError):
        return "bare", f"NotImplementedError: {first}"
    return "internal", f"{type(e).__name__}: {first}"


def scan_one(name: str, fn: t.Callable[..., t.Any]) -> Row:
    """The verdicts of one callable."""
    import gibbous

    found = sample(fn)
    if found is None:
        return Row(name, "no sample call", "skipped", "skipped", "skipped")
    loss = found.loss()
    given = found.args[found.at]
    x: t.Any = np.array(given, dtype=float) if isinstance(given, np.ndarray) else float(t.cast(float, given))
    v: t.Any = np.cos(np.arange(np.size(x)) * 1.7 + 0.3).reshape(np.shape(x))
    v = v if isinstance(x, np.ndarray) else 0.9
    verdicts: dict[str, Verdict] = {}
    why = ""
    with _quiet():
        try:
            expected = _central(loss, x, v, 1e-4)
        except Exception:
            return Row(name, found.text, "skipped", "skipped", "skipped", "not smooth here")
        runs: dict[str, t.Callable[[], float]] = {
            "reverse": lambda: float(np.sum(np.asarray(gibbous.grad(loss)(x)) * v)),
            "forward": lambda: float(gibbous.jvp(gibbous.build_frule(loss, x), loss, (x,), (v,))[1]),
        }
        for mode, run in runs.items():
            try:
                with _limit(_TIMEOUT):
                    verdicts[mode] = _verdict(run(), expected)
            except _Timeout:
                verdicts[mode], why = "skipped", why or f"{mode}: over {_TIMEOUT} s"
            except Exception as e:
                verdicts[mode], text = _classify(e)
                why = why or text
        verdicts["hvp"] = _hvp(loss, x, v) if verdicts["reverse"] in ("yes", "zero") else "skipped"
    return Row(name, found.text, verdicts["reverse"], verdicts["forward"], verdicts["hvp"], why)


def _hvp(loss: t.Callable[[t.Any], t.Any], x: t.Any, v: t.Any) -> Verdict:
    import gibbous

    try:
        with _limit(_TIMEOUT):
            h = np.asarray(gibbous.hvp(loss, x, v))
            grad = gibbous.grad(loss)
            d = (np.asarray(grad(x + 1e-4 * v)) - np.asarray(grad(x - 1e-4 * v))) / 2e-4
    except _Timeout:
        return "skipped"
    except Exception as e:
        return _classify(e)[0]
    if not np.all(np.isfinite(d)):
        return "skipped"
    return "yes" if np.allclose(h, d, rtol=1e-3, atol=1e-5) else "wrong"


def scan(modules: t.Sequence[str] = MODULES) -> list[Row]:
    rows = []
    for module in modules:
        try:
            found = public_callables(module)
        except ImportError:
            continue
        rows += [scan_one(name, t.cast(t.Callable[..., t.Any], fn)) for name, fn in found]
    return rows


def table(rows: t.Sequence[Row]) -> str:
    """The Markdown table of ``docs/supported.md``: a summary per module, then a row each."""
    marks = {"yes": "yes", "zero": "0", "wrong": "**WRONG**", "refused": "-", "bare": "-",
             "internal": "**internal**", "skipped": ""}  # fmt: skip
    by_module: dict[str, list[Row]] = {}
    for r in rows:
        by_module.setdefault(_module_of(r.name), []).append(r)
    out = ["| module | callables | sampled | reverse | forward | hvp |", "|---|---:|---:|---:|---:|---:|"]
    for module, rs in by_module.items():
        sampled = [r for r in rs if r.how != "no sample call"]
        count = [sum(getattr(r, m) in ("yes", "zero") for r in rs) for m in ("reverse", "forward", "hvp")]
        out.append(f"| {module} | {len(rs)} | {len(sampled)} | {count[0]} | {count[1]} | {count[2]} |")
    out += ["", "| callable | sample | reverse | forward | hvp | why not |", "|---|---|:-:|:-:|:-:|---|"]
    for r in rows:
        why = r.why.replace("|", "\\|")
        cells = [marks[r.reverse], marks[r.forward], marks[r.hvp]]
        out.append(f"| `{r.name}` | {r.how} | {' | '.join(cells)} | {why} |")
    return "\n".join(out) + "\n"


def _module_of(name: str) -> str:
    for module in sorted(MODULES, key=len, reverse=True):
        if name.startswith(module + "."):
            return module
    return name.rsplit(".", 1)[0]


_HEADER = """# What gibbous differentiates of NumPy and SciPy

Generated by `python -m gibbous rules --supported --write docs/supported.md` (issue 31): every
public callable of the modules below, called with typical float arguments inside a one-line
loss (the *sample*: `f(x)` with `x` an array of six numbers in (0.2, 0.9), `f(A)` with `A` a
3x3 symmetric positive definite matrix, ...: the first whose plain call returns finite
floats), differentiated with respect to that argument in reverse mode (`gibbous.grad`),
forward mode (`build_frule` / `jvp`) and as a Hessian-vector product (`gibbous.hvp`), each
against central differences.  `yes`: it matches; `0`: no derivative reaches the result (an
index, a count) and none is given; `-`: refused with a gibbous exception (the reason is the
last column); empty: no sample call, or not smooth there.  How a callable is differentiated
(a hand rule, NumPy's or SciPy's own source, a twin) is in docs/rules.md and
`python -m gibbous facts NAME`.

"""


def write_table(path: str, rows: t.Sequence[Row]) -> str:
    text = _HEADER + table(rows)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
    return text
