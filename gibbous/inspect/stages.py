"""``code_ir``: the IR of ``f`` specialised to example arguments, at a chosen stage.

Stages, in pipeline order:

* ``frontend``  — untyped IR as read from the bytecode (every value ``any``);
* ``typed``     — after type inference on the arguments' types;
* ``optimized`` — after the standard passes (or the ``passes`` given).
"""

from __future__ import annotations

import typing as t

from gibbous.frontend import function_ir
from gibbous.ir.core import Function
from gibbous.ir.types import typeof
from gibbous.passes import Pass, PassManager
from gibbous.passes.typeinfer import infer_types

STAGES = ("frontend", "typed", "optimized")
STANDARD_PIPELINE = ("fold", "dce", "cse", "simplify-cfg")


def code_ir(
    f: t.Callable[..., object],
    *args: object,
    stage: str = "typed",
    passes: t.Sequence[Pass | str] | str | None = None,
) -> Function:
    """The IR of ``f`` for arguments like ``args`` at ``stage`` (a fresh copy every call)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; the stages are {', '.join(STAGES)}")
    untyped = function_ir(f)
    if stage == "frontend":
        return untyped
    typed = infer_types(untyped, [typeof(a) for a in args], callee_ir=function_ir)
    if stage == "typed":
        return typed
    PassManager(STANDARD_PIPELINE if passes is None else passes, verify=True).run(typed)
    return typed
