"""Programs for the transforms' tests: typed, so that each mode takes its written forms.

A program's types must be known for forward mode to take complex values and for a
Hessian-vector product to differentiate the forward program again; a closure's cells and a
``**kwargs`` dict are typed ``any``.  So each program is made from its source, with the
call written out (literal options) and only modules and plain functions as globals."""

from __future__ import annotations

import typing as t

import numpy as np


def loss(y: t.Any) -> t.Any:
    """A real loss of a real or complex array, nonlinear in both parts (the Hessian of the
    program is not zero), with weights that differ entry by entry."""
    k = np.arange(y.size).reshape(y.shape)
    return np.sum(np.sin(np.real(y)) * np.cos(k)) + np.sum(np.cos(1.3 * np.imag(y)) * np.sin(k))


def program(body: str, **constants: t.Any) -> t.Callable[[np.ndarray], t.Any]:
    """``def f(x): <body>`` with ``np``, ``loss`` and ``constants`` as its globals."""
    lines = "".join(f"    {line}\n" for line in body.strip().splitlines())
    namespace: dict[str, t.Any] = {"np": np, "loss": loss, **constants}
    exec(f"def f(x):\n{lines}", namespace)
    return t.cast(t.Callable[[np.ndarray], t.Any], namespace["f"])


def operand(name: str, start: int, shape: tuple[int, ...], complex_: bool) -> tuple[str, int]:
    """The source of an operand of ``shape`` cut from the flat input ``x`` at ``start`` (real
    and imaginary parts one after the other), and where the next one starts."""
    size = int(np.prod(shape))
    real = f"x[{start}:{start + size}].reshape({shape})"
    if not complex_:
        return f"{name} = {real}", start + size
    imag = f"x[{start + size}:{start + 2 * size}].reshape({shape})"
    return f"{name} = {real} + 1j * {imag}", start + 2 * size
