"""The running Python's opcode table: complete for what the corpus uses, and faithful to
CPython's stack effects."""

from __future__ import annotations

import dis
import operator
import types
import typing as t

import pytest

from gibbous.frontend import common, decode, ops as O
from gibbous.frontend.decode import TABLE
from tests.frontend import corpus, corpus_numeric, unsupported

# Pseudo-instructions the compiler may name in dis.opmap or not, depending on the version.
PSEUDO = {"LOAD_CLOSURE", "STORE_FAST_MAYBE_NULL", "LOAD_METHOD", "JUMP", "JUMP_NO_INTERRUPT"}


def _code_objects(code: types.CodeType) -> t.Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _corpus_code() -> list[types.CodeType]:
    fns = dict.fromkeys(fn for fn, _, _ in corpus.CASES)
    return [c for fn in fns for c in _code_objects(t.cast(types.FunctionType, fn).__code__)]


def test_table_names_only_real_opcodes() -> None:
    assert set(TABLE) <= set(dis.opmap) | PSEUDO


def test_unsupported_table_names_only_known_opcodes() -> None:
    assert set(common.UNSUPPORTED) <= set(dis.opmap) | {
        "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_LOCALS",
        "ASYNC_GEN_WRAP", "SETUP_FINALLY", "SETUP_CLEANUP", "SETUP_WITH", "POP_BLOCK", "END_SEND",
        "CLEANUP_THROW", "LOAD_SUPER_ATTR", "PREP_RERAISE_STAR", "CHECK_EG_MATCH",
        "IMPORT_STAR", "PRINT_EXPR",
    }


def test_corpus_uses_no_unknown_opcode() -> None:
    used = {ins.opname for code in _corpus_code() for ins in dis.get_instructions(code)}
    assert used - set(TABLE) <= {"RERAISE", "PUSH_EXC_INFO", "POP_EXCEPT"} & used


def _net(op: O.Op) -> int:
    match op:
        case O.Copy() | O.ForIter():
            return 1
        case O.Swap():
            return 0
        case O.JumpIfOrPop():
            return -1
    pops, pushes = O.stack_effect(op)
    return pushes - pops


def test_stack_effects_match_cpython() -> None:
    """The neutral ops move the stack as CPython says (not jumping), instruction by
    instruction.  Compared as running totals, since 3.11 splits a call's effect between
    PRECALL and CALL, and we move the keyword names of 3.11/3.12 from KW_NAMES onto the stack.
    """
    for code in _corpus_code():
        by_offset: dict[int, list[O.Op]] = {}
        for d in decode.decode_ops(code):
            by_offset.setdefault(d.offset, []).append(d.op)
        ours = theirs = 0
        for ins in dis.get_instructions(code):
            if ins.opname in ("RETURN_GENERATOR", "RERAISE", "PUSH_EXC_INFO", "POP_EXCEPT"):
                continue
            ours += sum(_net(op) for op in by_offset[ins.offset])
            theirs += dis.stack_effect(ins.opcode, ins.arg, jump=False)
            if ins.opname not in ("PRECALL", "KW_NAMES"):
                assert ours == theirs, f"{ins.opname} {ins.arg} in {code.co_qualname}"


def test_comparisons_decode_to_operator_functions() -> None:
    def cmp(a: int, b: int) -> tuple[bool, ...]:
        return a < b, a <= b, a == b, a != b, a > b, a >= b

    found = [d.op.fn for d in decode.decode_ops(cmp.__code__) if isinstance(d.op, O.Compare)]
    assert found == [operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge]
    shown = [i.argval for i in dis.get_instructions(cmp) if i.opname == "COMPARE_OP"]
    assert shown == ["<", "<=", "==", "!=", ">", ">="]


def test_every_binary_operator_and_inplace_form() -> None:
    def ops(a: t.Any, b: t.Any) -> t.Any:
        c = a + b - a * b / a // b % a ** b @ a << b >> a & b | a ^ b
        c += a
        c -= a
        c *= a
        c /= a
        c //= a
        c %= a
        c **= a
        c @= a
        c <<= a
        c >>= a
        c &= a
        c |= a
        c ^= a
        return c

    found = {d.op.fn for d in decode.decode_ops(ops.__code__) if isinstance(d.op, O.BinaryOp)}
    assert found == set(common.BINARY_OPERATORS.values())


def test_jumps_name_offsets_of_instructions() -> None:
    for code in _corpus_code():
        decoded = decode.decode_ops(code)
        offsets = {d.offset for d in decoded}
        assert all(d.target in offsets for d in decoded if d.target is not None)


def test_cleanup_handlers_that_only_reraise_are_left_out() -> None:
    # Comprehensions (3.12+), generator expressions and except bodies get handlers that
    # restore state and re-raise; with nothing to catch the exception again, they are
    # unobservable.  (The corpus's other files have try and with statements.)
    plain = (corpus.__file__, corpus_numeric.__file__)
    for code in _corpus_code():
        if code.co_filename in plain:
            assert decode.exception_table(code) == [], code.co_qualname


def _try_with_finally(x: t.Any) -> t.Any:
    try:
        y = x * 2
    except ValueError:
        y = x
    finally:
        z = [v for v in (1, 2)]
    with open(x):
        pass
    return y, z


def test_exception_table_entries_of_try_with_and_finally() -> None:
    code = _try_with_finally.__code__
    entries = decode.exception_table(code)
    ops = {d.offset: d.op for d in decode.decode_ops(code)}
    targets = {ops[e.target] for e in entries}
    # The except clause, the finally clause and the with's cleanup start with PushExcInfo;
    # the except clause's own clean-up (re-raising into the finally clause) stays too.
    assert O.PushExcInfo() in targets
    assert len([e for e in entries if isinstance(ops[e.target], O.PushExcInfo)]) >= 3
    decoded = decode.decode_ops(code)
    covered = {d.offset for d in decoded if any(e.start <= d.offset < e.end for e in entries)}
    multiplies = [off for off, op in ops.items() if op == O.BinaryOp(operator.mul)]
    assert multiplies and all(off in covered for off in multiplies)


@pytest.mark.parametrize("opname", sorted(common.UNSUPPORTED))
def test_unsupported_opcodes_decode_to_unsupported(opname: str) -> None:
    op = common.unsupported(opname)
    assert isinstance(op, O.Unsupported) and op.construct and op.hint


def test_corpus_exercises_the_table() -> None:
    """Every opcode the running Python's table handles appears in the corpus, but for those
    CPython emits only elsewhere (CACHE entries dis hides, pseudo-instructions, the
    NO_INTERRUPT jumps of yield-from and async code)."""
    used = {ins.opname for code in _corpus_code() for ins in dis.get_instructions(code)}
    elsewhere = {"CACHE", "JUMP_BACKWARD_NO_INTERRUPT", "STORE_FAST_MAYBE_NULL"}
    if "LOAD_FAST_LOAD_FAST" in TABLE:  # where LOAD_CLOSURE became LOAD_FAST
        elsewhere.add("LOAD_CLOSURE")
    assert set(TABLE) - elsewhere <= used


def _executed_offsets(fn: t.Callable[..., object], *args: object) -> list[int]:
    """The offsets of the instructions CPython runs for ``fn(*args)``."""
    import sys

    code = t.cast(types.FunctionType, fn).__code__
    seen: list[int] = []
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:  # 3.12+: settrace no longer reports every opcode reliably
        tool = 5
        monitoring.use_tool_id(tool, "gibbous-test")
        try:
            monitoring.register_callback(
                tool, monitoring.events.INSTRUCTION,
                lambda c, offset: seen.append(offset) if c is code else None,
            )
            monitoring.set_local_events(tool, code, monitoring.events.INSTRUCTION)
            fn(*args)
            monitoring.set_local_events(tool, code, 0)
        finally:
            monitoring.free_tool_id(tool)
        return seen

    def trace(frame: types.FrameType, event: str, arg: object) -> object:
        if frame.f_code is code:
            frame.f_trace_opcodes = True
            if event == "opcode":
                seen.append(frame.f_lasti)
        return trace

    sys.settrace(trace)  # type: ignore[arg-type]
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return seen


def loop_with_else(xs: list[int]) -> int:
    t = 0
    for x in xs:
        t += x
    else:
        t = -t
    return t


def test_for_iter_exit_is_where_cpython_goes() -> None:
    """Empirically: after the iterator is exhausted, CPython's next instruction is our exit."""
    (for_iter,) = [d for d in decode.decode_ops(loop_with_else.__code__)
                   if isinstance(d.op, O.ForIter)]
    assert isinstance(for_iter.op, O.ForIter)
    offsets = _executed_offsets(loop_with_else, [1, 2])
    last = max(k for k, off in enumerate(offsets) if off == for_iter.offset)
    assert offsets[last + 1] == for_iter.op.exit
