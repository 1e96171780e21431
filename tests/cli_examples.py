"""Functions for the CLI tests (tests/test_cli_inspect.py): ``python -m gibbous ir
tests.cli_examples:loss --args "np.ones((3, 3)), np.ones(3)"``."""

from __future__ import annotations

import math

import numpy as np


def loss(W: np.ndarray, x: np.ndarray) -> float:
    h = np.tanh(W @ x)
    return float(np.sum(h * h))


def square(v: np.ndarray) -> np.ndarray:
    return v * v


def mixed(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> float:
    np.matmul(A, B, out=C)  # the stateful in-place matmul
    s = square(C)  # a user function: a derived rule
    n = len(A)  # no derivative
    return float(np.sum(np.tanh(s))) / n


def needs_dist(x: float) -> float:
    return math.dist((x, 1.0), (0.0, 0.0)) * x  # math.dist has no rule


def labelled(x: float) -> float:
    if x > 0:
        note = 'say "hi" \\ {ok}'
    else:
        note = "<none>"
    return x * len(note)


def unsupported(x: float) -> float:
    match x:
        case complex(real=r):
            return r
        case _:
            return x * 2


def apply_first(fns: list, x: float) -> float:
    return fns[0](x) * 2.0  # the callee is a value: its rule is chosen at run time


def rounded(x: np.ndarray) -> float:
    return float(np.sum(np.floor(x) * x))  # numpy.floor: a zero-derivative rule
