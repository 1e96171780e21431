"""The shape of the IR the frontend builds: conventions other passes rely on."""

from __future__ import annotations

import inspect
import operator
import types
import typing as t

import numpy as np
import pytest

from gibbous.frontend import function_ir
from gibbous.ir import runtime
from gibbous.ir import verify
from gibbous.ir.core import Branch, Call, Constant, Function, Result
from tests.frontend import corpus
from tests.frontend.interp import run


def _line_of(fn: t.Callable[..., object], text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, s in enumerate(lines) if text in s)


def _calls_of(ir: Function, callee: object) -> list[Call]:
    return [c for c in ir.calls() if isinstance(c.callee, Constant) and c.callee.value is callee]


def located(a, b):
    c = a * b
    d = np.sin(
        c
    )
    return c + d


def test_locations_point_at_the_source_lines() -> None:
    ir = function_ir(located)
    file = located.__code__.co_filename
    (mul,) = _calls_of(ir, operator.mul)
    (sin,) = _calls_of(ir, np.sin)
    (add,) = _calls_of(ir, operator.add)
    assert mul.loc is not None and mul.loc.file == file
    assert mul.loc.line == _line_of(located, "c = a * b")
    assert sin.loc is not None and sin.loc.line == _line_of(located, "d = np.sin(")
    assert add.loc is not None and add.loc.line == _line_of(located, "return c + d")
    assert ir.loc is not None and ir.loc.line == located.__code__.co_firstlineno


def test_values_are_named_after_locals() -> None:
    text = str(function_ir(corpus.for_range))
    assert "%s = call operator.iadd(" in text or "%s.1 = call operator.iadd(" in text
    assert "%i = call gibbous.ir.runtime.next_or_stop(" in text


def test_loop_item_reaches_the_body_as_a_block_argument() -> None:
    ir = function_ir(corpus.for_list)
    (step,) = _calls_of(ir, runtime.next_or_stop)
    (stop,) = _calls_of(ir, runtime.is_stop)
    branch = step.parent.terminator if step.parent is not None else None
    assert isinstance(branch, Branch) and branch.cond is stop.result
    assert branch.false_args[-1] is step.result  # exit on true, body on false
    assert branch.if_false.args[-1].name == "x"


def test_unbound_checks_only_where_a_local_may_be_unbound() -> None:
    assert not _calls_of(function_ir(corpus.while_loop), runtime.check_bound)
    assert not _calls_of(function_ir(corpus.for_else), runtime.check_bound)
    assert len(_calls_of(function_ir(corpus.maybe_unbound), runtime.check_bound)) == 1
    assert len(_calls_of(function_ir(corpus.loop_var_after_loop), runtime.check_bound)) == 1


def test_branches_test_truth_explicitly() -> None:
    ir = function_ir(corpus.if_elif_else)
    for block in ir.blocks:
        term = block.terminator
        if isinstance(term, Branch):
            cond = term.cond
            assert isinstance(cond, Result) and isinstance(cond.op.callee, Constant)
            assert cond.op.callee.value in (operator.truth, runtime.is_stop, operator.is_)


def test_method_calls_call_the_bound_method() -> None:
    ir = function_ir(corpus.method_calls)
    getattrs = [
        c for c in _calls_of(ir, getattr) if t.cast(Constant, c.args[1]).value == "append"
    ]
    (get,) = getattrs
    (user,) = [u.user for u in get.result.uses]
    assert isinstance(user, Call) and user.callee is get.result


GLOBAL_SCALE = 2.0


def uses_global(x):
    return x * GLOBAL_SCALE


def uses_missing_global(x):
    return x * NOT_DEFINED_ANYWHERE  # noqa: F821


def test_globals_are_read_once_when_the_ir_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    ir = function_ir(uses_global)
    monkeypatch.setitem(globals(), "GLOBAL_SCALE", 10.0)
    assert run(ir, 3.0) == 6.0
    assert uses_global(3.0) == 30.0


def test_a_missing_global_fails_at_run_time_not_build_time() -> None:
    ir = function_ir(uses_missing_global)
    assert _calls_of(ir, runtime.name_error)
    with pytest.raises(NameError, match="NOT_DEFINED_ANYWHERE"):
        run(ir, 1.0)


def make_counter():
    n = 0

    def read():
        return n

    def bump():
        nonlocal n
        n += 1

    return read, bump


def test_closure_cells_are_read_at_call_time() -> None:
    read, bump = make_counter()
    ir = function_ir(read)
    assert run(ir) == 0
    bump()
    assert run(ir) == 1
    assert _calls_of(ir, runtime.closure_cell) and _calls_of(ir, runtime.cell_get)


def test_generator_expression_ir_returns_the_list_of_values() -> None:
    def tens(xs):
        return sum(x * 10 for x in xs)

    made = run(function_ir(tens), [1, 2])
    assert made == 30
    ir = function_ir(tens)
    (make,) = _calls_of(ir, runtime.make_genexpr)
    code = t.cast(Constant, make.args[0]).value
    assert isinstance(code, types.CodeType)
    genexpr = runtime.make_genexpr(code, tens, None)  # type: ignore[arg-type]
    body = function_ir(genexpr)
    verify(body)
    assert run(body, iter([1, 2, 3])) == [10, 20, 30]
    assert genexpr(iter([1, 2])) == [10, 20]


def _nested_functions() -> t.Iterator[tuple[str, object]]:
    """Every nested function and generator expression of the corpus, made with dummy cells."""
    seen: set[int] = set()
    for fn, _, _ in corpus.CASES:
        consts = t.cast(types.FunctionType, fn).__code__.co_consts
        stack = [c for c in consts if isinstance(c, types.CodeType)]
        while stack:
            code = stack.pop()
            if id(code) in seen:
                continue
            seen.add(id(code))
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            cells = tuple(types.CellType(0) for _ in code.co_freevars)
            made = types.FunctionType(code, vars(corpus), code.co_name, None, cells or None)
            if code.co_name == "<genexpr>":
                yield code.co_qualname, runtime.GenexprFunction(made)
            elif not code.co_flags & inspect.CO_GENERATOR:
                yield code.co_qualname, made


NESTED = list(_nested_functions())


@pytest.mark.parametrize(("name", "fn"), NESTED, ids=[n for n, _ in NESTED])
def test_nested_code_builds_verifies_and_prints(name: str, fn: object) -> None:
    ir = function_ir(fn)
    verify(ir)
    assert str(ir).startswith("func @")


FUNCTIONS = list(dict.fromkeys(fn for fn, _, _ in corpus.CASES))


@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_printed_ir_parses_back(fn: t.Callable[..., object]) -> None:
    from gibbous.ir.core import structurally_equal
    from gibbous.ir.parser import parse

    ir = function_ir(fn)
    text = str(ir)
    back = parse(text)
    assert str(back) == text
    assert structurally_equal(back, ir)


def test_registered_objects_resolve_by_path() -> None:
    from gibbous.ir.names import resolve

    code = (lambda: 0).__code__
    path = runtime.register_object(code, "code_<lambda>")
    assert path.startswith("gibbous.ir.runtime.registered.code_lambda")
    assert runtime.register_object(code, "other") == path
    assert resolve(path) is code
    assert runtime.registered_path(code) == path
