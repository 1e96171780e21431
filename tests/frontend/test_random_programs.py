"""Random programs mean the same natively, interpreted from their IR and compiled from it.

Each program (``tests/frontend/programs.py``) is written to a real ``.py`` file and executed
from there, so its code has a real file name and ``inspect`` finds its source.  Then, on a few
argument tuples, the native function, the IR interpreter (shallow, and deep: the program's
lambdas and comprehensions through their own IR too) and the NumPy backend's compiled
function must return the same values (exactly: the same operations run on the same values;
nan equal to nan) or raise the same exception type, and leave array arguments in the same
state.  The IR must verify and its text must parse back to the same IR.

On a failure Hypothesis prints the (shrunk) program's source.
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import inspect
import os
import shutil
import tempfile
import types
import typing as t
import warnings

import numpy as np
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from gibbous.backends.numpy import compile_function
from gibbous.frontend import function_ir
from gibbous.ir import runtime
from gibbous.ir import parse, verify
from gibbous.ir.core import structurally_equal
from tests.frontend.helpers import same
from tests.frontend.interp import run
from tests.frontend.programs import Program, arguments, programs

_DIR = tempfile.mkdtemp(prefix="gibbous-programs-")
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)


def load(program: Program) -> types.FunctionType:
    """``f`` from the program, executed from a real file in a fresh namespace."""
    digest = hashlib.sha1(program.source.encode()).hexdigest()[:12]
    path = os.path.join(_DIR, f"program_{digest}.py")
    with open(path, "w", encoding="utf-8") as file:
        file.write(program.source)
    namespace: dict[str, object] = {"__name__": f"program_{digest}", "__file__": path}
    exec(compile(program.source, path, "exec"), namespace)
    return t.cast(types.FunctionType, namespace["f"])


Outcome = tuple[str, object]


def outcome(fn: t.Callable[..., object], args: tuple[object, ...]) -> Outcome:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "returned", fn(*args)
        except Exception as e:  # the comparison is the point
            return "raised", type(e)


def agree(a: Outcome, b: Outcome) -> bool:
    if a[0] != b[0]:
        return False
    return a[1] is b[1] if a[0] == "raised" else same(a[1], b[1])


# More examples for a bug hunt: GIBBOUS_PROGRAMS=5000 python -m pytest this file
# --hypothesis-show-statistics (the statistics count the outcomes).
EXAMPLES = int(os.environ.get("GIBBOUS_PROGRAMS", "150"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs(), data=st.data())
def test_random_programs_mean_the_same(program: Program, data: st.DataObject) -> None:
    note(program.source)
    f = load(program)
    assert inspect.getsource(f).startswith("def f(")

    ir = function_ir(f)
    verify(ir)
    text = str(ir)
    back = parse(text)
    assert str(back) == text
    assert structurally_equal(back, ir)
    compiled = compile_function(ir)
    note(compiled.__gibbous_source__)  # type: ignore[attr-defined]

    def own_code(fn: object) -> bool:
        """Lambdas and comprehensions of the program: the deep run interprets their IR too."""
        if isinstance(fn, runtime.GenexprFunction):
            return True
        return isinstance(fn, types.FunctionType) and fn.__code__.co_filename == path

    path = f.__code__.co_filename
    runners: dict[str, t.Callable[..., object]] = {
        "interpreted": lambda *a: run(ir, *a),
        "interpreted all the way down": lambda *a: run(ir, *a, deep=own_code),
        "compiled": compiled,
    }
    tuples = data.draw(st.lists(arguments(program), min_size=2, max_size=4), label="arguments")
    for args in tuples:
        native_args = copy.deepcopy(args)
        native = outcome(f, native_args)
        event(native[0] if native[0] == "returned" else f"raised {native[1].__name__}")  # type: ignore[attr-defined]
        for how, runner in runners.items():
            ir_args = copy.deepcopy(args)
            ran = outcome(runner, ir_args)
            assert agree(native, ran), f"{args!r}: native {native}, {how} {ran}"
            assert same(native_args, ir_args), f"{args!r}: arguments end differently ({how})"
