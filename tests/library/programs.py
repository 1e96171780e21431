"""A program's derivatives in every mode against central differences: the gradient
(``gibbous.grad``), a jvp (``build_frule``), and a Hessian-vector product (``gibbous.hvp``)
against differences of the gradient; reverse and forward agree through both matching
``<grad, v>``."""

from __future__ import annotations

import typing as t

import numpy as np

import gibbous


def at_least(module: str, version: str) -> bool:
    """Whether the installed ``module`` (``numpy``, ``scipy``) is ``version`` or newer: for the
    known problems that one version has (CI runs NumPy 2.4 with SciPy 1.17 and NumPy 2.5 with
    SciPy 1.18)."""
    import importlib

    return np.lib.NumpyVersion(importlib.import_module(module).__version__) >= version


def _central(f: t.Callable[[t.Any], t.Any], x: np.ndarray, v: np.ndarray, h: float) -> t.Any:
    """Richardson-extrapolated central difference of ``f`` at ``x`` along ``v``."""
    d1 = (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)
    d2 = (np.asarray(f(x + h / 2 * v)) - np.asarray(f(x - h / 2 * v))) / h
    return (4 * d2 - d1) / 3


def check_program(
    f: t.Callable[[np.ndarray], t.Any],
    x: np.ndarray,
    *,
    modes: str = "rfh",
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> None:
    """``f``'s derivatives at ``x`` in the modes named (``r``everse, ``f``orward, ``h``vp),
    each against central differences."""
    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(7)
    v = rng.standard_normal(x.shape)
    fd = _central(f, x, v, 1e-4)
    if "r" in modes:
        g = np.asarray(gibbous.grad(f)(x))
        np.testing.assert_allclose(np.sum(g * v), fd, rtol=rtol * 100, atol=atol * 100)
    if "f" in modes:
        _, d = gibbous.jvp(gibbous.build_frule(f, x), f, (x,), (v,))
        np.testing.assert_allclose(d, fd, rtol=rtol * 100, atol=atol * 100)
    if "h" in modes:
        grad = gibbous.grad(f)
        h = np.asarray(gibbous.hvp(f, x, v))
        np.testing.assert_allclose(h, _central(grad, x, v, 1e-3), rtol=1e-5, atol=1e-6)


def check_mode(name: str, f: t.Callable[[np.ndarray], t.Any], x: np.ndarray, mode: str, works: bool) -> None:
    """``f``'s derivative in ``mode`` (``r``, ``f`` or ``h``) against central differences
    where it ``works``; else refused by a gibbous exception, never a wrong value (a refusal
    that starts working fails too: the table that says ``works`` is behind)."""
    if works:
        check_program(f, x, modes=mode)
        return
    from gibbous.ir.exceptions import GibbousError

    try:
        check_program(f, x, modes=mode)
    except GibbousError:
        return
    raise AssertionError(f"{name} now differentiates in mode {mode!r}: say so in its table")
