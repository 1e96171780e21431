"""What the corpus files share: a list of cases and the decorator that fills it."""

from __future__ import annotations

import typing as t

import numpy as np

Case = tuple[t.Callable[..., object], tuple[object, ...], dict[str, object]]
F = t.TypeVar("F", bound=t.Callable[..., object])


def collector() -> tuple[list[Case], t.Callable[..., t.Callable[[F], F]]]:
    """``CASES, sample = collector()``: ``@sample(*args, **kwargs)`` adds a case to ``CASES``
    (several for a function decorated several times)."""
    cases: list[Case] = []

    def sample(*args: object, **kwargs: object) -> t.Callable[[F], F]:
        def register(fn: F) -> F:
            cases.append((fn, args, kwargs))
            return fn

        return register

    return cases, sample


def vec(*xs: float) -> np.ndarray:
    return np.array(xs, dtype=float)
