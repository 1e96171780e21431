"""How messages name callables (gibbous.rules.public_names.callable_name): by the public name
users import them by, while the IR keeps the paths its parser resolves."""

from __future__ import annotations

import subprocess
import sys
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.ir.runtime import register_object
from gibbous.inspect import code_ir
from gibbous.rules.registry import MissingRuleError, callable_name

sps = pytest.importorskip("scipy.special")
import scipy.linalg  # noqa: E402
import scipy.stats  # noqa: E402


def kolmogi_sum(x: t.Any) -> float:
    return float(np.sum(sps.kolmogi(x)))  # a ufunc without a rule


def test_a_missing_rule_names_the_public_callable() -> None:
    x = np.array([0.5, 0.25])
    with pytest.raises(MissingRuleError) as info:
        gibbous.grad(kolmogi_sum)(x)
    message = str(info.value)
    assert "no rule to differentiate scipy.special.kolmogi(f64[:])" in message
    assert "@gibbous.primitive(scipy.special.kolmogi, 'f64[:]')" in message
    assert "registered" not in message
    # The IR still prints the path the parser resolves back to the ufunc.
    typed = str(code_ir(kolmogi_sum, x, stage="typed"))
    assert "gibbous.ir.runtime.registered.scipy_special_kolmogi" in typed


def outer() -> t.Callable[[], None]:
    def inner() -> None:
        pass

    return inner


@pytest.mark.parametrize(
    "fn, name",
    [
        (sps.ndtr, "scipy.special.ndtr"),  # a ufunc: its __module__ is numpy's
        (sps.logsumexp, "scipy.special.logsumexp"),  # defined in a private module
        (scipy.linalg.solve_triangular, "scipy.linalg.solve_triangular"),
        (scipy.stats.rv_continuous.logpdf, "scipy.stats.rv_continuous.logpdf"),
        (scipy.stats.norm.cdf, "scipy.stats.norm.cdf"),  # a method of a public instance
        (scipy.stats.multivariate_normal.logpdf, "scipy.stats.multivariate_normal.logpdf"),
        (np.random.default_rng(0).normal, "numpy.random.Generator.normal"),
        (np.sin, "numpy.sin"),
        (np.add.reduce, "numpy.add.reduce"),
        (np.ndarray.sum, "numpy.ndarray.sum"),
        (map, "builtins.map"),
        (outer(), f"{__name__}.outer.<locals>.inner"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_callable_names(fn: object, name: str) -> None:
    from gibbous.ir import runtime

    known = runtime.registered_path(fn)
    register_object(fn, "registered_for_the_test")  # never the name messages give
    try:
        assert callable_name(fn) == name
    finally:  # the registry is the process's: a path left there would rename fn in printed IR
        if known is None:
            runtime.unregister_object(fn)


def test_naming_imports_nothing() -> None:
    code = """
import sys, numpy as np
from gibbous.rules.registry import callable_name
assert callable_name(np.frexp) == "numpy.frexp"
assert callable_name(len) == "builtins.len"
assert "scipy" not in sys.modules, sorted(m for m in sys.modules if m.startswith("scipy"))
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
