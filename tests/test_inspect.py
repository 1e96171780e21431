"""gibbous.inspect.code_ir: the IR at each stage."""

from __future__ import annotations

import numpy as np
import pytest

from gibbous.backends.numpy import compile_function
from gibbous.inspect import STAGES, code_ir
from gibbous.ir import parse, verify


def loss(W: np.ndarray, x: np.ndarray) -> float:
    h = np.tanh(W @ x)
    unused = np.cos(x)  # noqa: F841  (dead: the optimized stage drops it)
    return float(np.sum(h * h))


ARGS = (np.arange(6.0).reshape(2, 3) / 10, np.array([0.5, -1.0, 2.0]))


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_verifies_runs_and_round_trips(stage: str) -> None:
    ir = code_ir(loss, *ARGS, stage=stage)
    verify(ir)
    assert str(parse(str(ir))) == str(ir)
    assert compile_function(ir)(*ARGS) == loss(*ARGS)


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
