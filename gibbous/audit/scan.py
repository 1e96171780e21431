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
written from it (``gibbous.audit.supported``), and tests/test_scan.py checks it is current and
that no callable ends in ``internal`` or ``wrong``.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import signal
import sys
import time
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
    solve_bvp ode complex_ode newton_cotes lebedev_rule cubature nsum tanhsinh
""".split())
_TIMEOUT = 10  # seconds per mode of a callable (over it: ``skipped``, and the reason says so)

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
        methods = _distribution_methods(value)
        if methods is not None:  # (a distribution: what users differentiate are its methods)
            found += [(f"{module}.{n}.{m}", getattr(value, m)) for m in methods]
            continue
        found.append((f"{module}.{n}", value))
    return found


def _distribution_methods(value: object) -> tuple[str, ...] | None:
    """The methods scanned of a ``scipy.stats`` distribution (the same sample patterns: the
    point first, then the shape parameters); ``None`` for anything else."""
    stats = sys.modules.get("scipy.stats")
    if stats is None:
        return None
    if isinstance(value, stats.rv_continuous):
        return ("logpdf", "cdf")
    if isinstance(value, stats.rv_discrete):
        return ("logpmf",)  # (differentiated in its float shape parameters: f(2, x))
    return None


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
    ((_X, _X[::-1].copy(), _X * 0.5 + 0.003), 0, "f(x, y, z)"),  # (no value of x: general position)
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


class _Timeout(BaseException):
    """(not an ``Exception``: code under the limit that catches those does not swallow it)"""


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
    # (again every second after the first: an exception raised where Python ignores it, in a
    # weakref's callback or a __del__, must not let the call run on unlimited)
    hook = sys.unraisablehook

    def quiet(unraisable: t.Any) -> None:  # (and not printed there)
        if not isinstance(unraisable.exc_value, _Timeout):
            hook(unraisable)

    sys.unraisablehook = quiet
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        sys.unraisablehook = hook


def _central(f: t.Callable[[t.Any], t.Any], x: t.Any, v: t.Any, h: float) -> float:
    d1 = (float(f(x + h * v)) - float(f(x - h * v))) / (2 * h)
    d2 = (float(f(x + h / 2 * v)) - float(f(x - h / 2 * v))) / h
    return (4 * d2 - d1) / 3


def _agree(got: float, expected: float) -> bool:
    return bool(abs(got - expected) <= 1e-4 * max(1.0, abs(expected)))


def _verdict(got: float, expected: float) -> Verdict:
    if not (np.isfinite(expected) and np.isfinite(got)):
        return "skipped"  # (not differentiable at the sample: sqrt at 0 inside np.kaiser)
    if not _agree(got, expected):
        return "wrong"
    return "zero" if got == 0.0 and abs(expected) < 1e-9 else "yes"


def clean(text: str) -> str:
    """A refusal's text without what differs from one machine to another: the scan's own
    line (the loss is the user's code here), absolute paths (shown from the package on)."""
    text = _SCAN_LINE.sub("", text).replace(" in DefaultContext", "")
    return _PATH.sub(lambda m: m.group(1) or m.group(2), text)


_SCAN_LINE = re.compile(r" at \S*gibbous/audit/scan\.py:\d+")
# (a path into site-packages or the standard library keeps what follows; into a checkout, what
# follows its last gibbous/, the package: a clone in a folder named gibbous has two)
_PATH = re.compile(
    r"/\S*?/(?:site-packages/|lib/python3\.\d+/(?!site-packages/))(\S+?\.py:\d+)"
    r"|/\S*/(gibbous/\S+?\.py:\d+)"
)


def _classify(e: BaseException) -> tuple[Verdict, str]:
    from gibbous.ir.exceptions import GibbousError

    first = clean(str(e).split("\n", 1)[0])[:160]
    if isinstance(e, GibbousError):
        return "refused", f"{type(e).__name__}: {first}"
    if isinstance(e, NotImplementedError):
        return "bare", f"NotImplementedError: {first}"
    return "internal", f"{type(e).__name__}: {first}"


def scan_one(name: str, fn: t.Callable[..., t.Any]) -> Row:
    """The verdicts of one callable (``why``: the first refusal, or time-out, by mode)."""
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
    slow: list[str] = []
    with _quiet():
        try:
            expected = _central(loss, x, v, 1e-4)
            coarse = _central(loss, x, v, 1e-3)
        except Exception:
            return Row(name, found.text, "skipped", "skipped", "skipped", "not smooth here")
        if not _agree(coarse, expected):  # (a jump or a kink: the differences depend on the step)
            return Row(name, found.text, "skipped", "skipped", "skipped", "not smooth here")
        for mode, run in _modes(loss, x, v, expected).items():
            if mode == "hvp" and verdicts["reverse"] not in ("yes", "zero"):
                verdicts[mode] = "skipped"
                continue
            try:
                with _limit(_TIMEOUT):
                    verdicts[mode] = run()
            except _Timeout:  # (always said: a time-out behind a refusal is still one)
                verdicts[mode] = "skipped"
                slow.append(f"{mode}: over {_TIMEOUT} s")
            except Exception as e:
                verdicts[mode], text = _classify(e)
                why = why or f"{mode}: {text}"
    why = "; ".join([why, *slow]) if why else "; ".join(slow)
    return Row(name, found.text, verdicts["reverse"], verdicts["forward"], verdicts["hvp"], why)


def _modes(
    loss: t.Callable[[t.Any], t.Any], x: t.Any, v: t.Any, expected: float
) -> dict[str, t.Callable[[], Verdict]]:
    """Each mode's check: reverse and forward against ``expected``, the central difference
    along ``v``; hvp against central differences of the gradient."""
    import gibbous

    def reverse() -> Verdict:
        return _verdict(float(np.sum(np.asarray(gibbous.grad(loss)(x)) * v)), expected)

    def forward() -> Verdict:
        return _verdict(float(gibbous.jvp(gibbous.build_frule(loss, x), loss, (x,), (v,))[1]), expected)

    def hvp() -> Verdict:
        h = np.asarray(gibbous.hvp(loss, x, v))
        grad = gibbous.grad(loss)
        d = (np.asarray(grad(x + 1e-4 * v)) - np.asarray(grad(x - 1e-4 * v))) / 2e-4
        if not np.all(np.isfinite(d)):
            return "skipped"
        return "yes" if np.allclose(h, d, rtol=1e-3, atol=1e-5) else "wrong"

    return {"reverse": reverse, "forward": forward, "hvp": hvp}


def scan(
    modules: t.Sequence[str] = MODULES, progress: t.Callable[[str], None] | None = None
) -> list[Row]:
    """The rows of ``modules`` (one not installed has none); ``progress`` hears of each
    module scanned."""
    rows = []
    for module in modules:
        try:
            found = public_callables(module)
        except ImportError:
            continue
        start = time.perf_counter()
        rows += [scan_one(name, t.cast(t.Callable[..., t.Any], fn)) for name, fn in found]
        if progress is not None:
            progress(f"{module}: {len(found)} callables in {time.perf_counter() - start:.0f} s")
    return rows


def module_of(name: str) -> str:
    """The scanned module a public name belongs to (the longest that prefixes it)."""
    for module in sorted(MODULES, key=len, reverse=True):
        if name.startswith(module + "."):
            return module
    return name.rsplit(".", 1)[0]
