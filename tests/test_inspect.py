"""gibbous.inspect.code_ir: the IR at each stage."""

from __future__ import annotations

import copy
import typing as t

import numpy as np
import pytest

from gibbous.backends.numpy import compile_function
from gibbous.api import build_rrule
from gibbous.inspect import code_ir
from gibbous.ir import parse, verify


def loss(W: np.ndarray, x: np.ndarray) -> float:
    h = np.tanh(W @ x)
    unused = np.cos(x)  # noqa: F841  (dead: the optimized stage drops it)
    return float(np.sum(h * h))


ARGS = (np.arange(6.0).reshape(2, 3) / 10, np.array([0.5, -1.0, 2.0]))
PRIMAL_STAGES = ("frontend", "typed", "optimized")


@pytest.mark.parametrize("stage", PRIMAL_STAGES)
def test_every_stage_verifies_runs_and_round_trips(stage: str) -> None:
    ir = code_ir(loss, *ARGS, stage=stage)
    verify(ir)
    assert str(parse(str(ir))) == str(ir)
    assert compile_function(ir)(*ARGS) == loss(*ARGS)


@pytest.mark.parametrize("stage", ["forward", "reverse"])
def test_the_ad_stages_are_what_build_rrule_compiles(stage: str) -> None:
    ir = code_ir(loss, *ARGS, stage=stage)
    verify(ir)
    built = build_rrule(loss, *ARGS).program.description
    assert str(ir) == str(built.forward if stage == "forward" else built.reverse)


def test_frontend_is_untyped_and_typed_is_precise() -> None:
    assert ": any" in str(code_ir(loss, *ARGS, stage="frontend"))
    typed = str(code_ir(loss, *ARGS, stage="typed"))
    assert "any" not in typed
    assert "%W: f64[:,:], %x: f64[:]" in typed


def test_optimized_drops_dead_pure_code() -> None:
    assert "numpy.cos" in str(code_ir(loss, *ARGS, stage="typed"))
    assert "numpy.cos" not in str(code_ir(loss, *ARGS, stage="optimized"))
    # Given passes replace the standard pipeline.
    assert "numpy.cos" in str(code_ir(loss, *ARGS, stage="optimized", passes=["cse"]))


def test_unknown_stage_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown stage 'typo'; the stages are frontend"):
        code_ir(loss, *ARGS, stage="typo")


def _corpus() -> list[t.Any]:
    from tests.frontend.corpus import CASES

    return [
        pytest.param(fn, args, kwargs, id=f"{fn.__name__}-{n}")
        for n, (fn, args, kwargs) in enumerate(CASES)
    ]


@pytest.mark.parametrize(("fn", "args", "kwargs"), _corpus())
def test_code_ir_shows_what_build_rrule_differentiates(
    fn: t.Callable[..., t.Any], args: tuple[t.Any, ...], kwargs: dict[str, t.Any]
) -> None:
    """Over the whole corpus: each stage of code_ir verifies, and the optimized IR and the
    forward program are the very ones build_rrule compiles (or both refuse alike)."""
    args, kwargs = copy.deepcopy((args, kwargs))
    try:
        built = build_rrule(fn, *args, **kwargs).program.description
    except Exception as e:
        with pytest.raises(type(e)):
            code_ir(fn, *args, stage="optimized", **kwargs)
        return
    for stage in ("frontend", "typed"):
        verify(code_ir(fn, *args, stage=stage, **kwargs))
    assert str(code_ir(fn, *args, stage="optimized", **kwargs)) == str(built.typed)
    assert str(code_ir(fn, *args, stage="forward", **kwargs)) == str(built.forward)
