"""Opcode handlers shared by the per-version tables, and the state they read.

A handler turns one ``dis.Instruction`` into neutral operations (``ops``).  ``SHARED`` holds
the opcodes whose meaning is the same on CPython 3.11, 3.12 and 3.13; each version's table
adds its own.  Anything a table does not know decodes to ``Unsupported``.
"""

from __future__ import annotations

import dis
import operator
import types
import typing as t

import attrs

from gibbous.frontend import ops


@attrs.define
class DecodeState:
    """What a handler may look at besides its instruction: the code and its instructions."""

    code: types.CodeType
    instructions: list[dis.Instruction]
    index: dict[int, int]  # offset -> position in ``instructions``
    kwnames_pending: bool = False  # 3.11/3.12: KW_NAMES names the next CALL's keywords

    def after(self, offset: int, *opnames: str) -> int:
        """The offset just past the instructions ``opnames`` found in order at ``offset``."""
        i = self.index[offset]
        for name in opnames:
            found = self.instructions[i].opname
            if found != name:
                raise AssertionError(f"expected {name} at offset {offset}, found {found}")
            i += 1
        return self.instructions[i].offset


Handler = t.Callable[[dis.Instruction, DecodeState], list[ops.Op]]

# BINARY_OP's argument as dis shows it (the operator symbol), 3.11 to 3.13.
BINARY_OPERATORS: dict[str, t.Callable[..., object]] = {
    "+": operator.add,
    "&": operator.and_,
    "//": operator.floordiv,
    "<<": operator.lshift,
    "@": operator.matmul,
    "*": operator.mul,
    "%": operator.mod,
    "|": operator.or_,
    "**": operator.pow,
    ">>": operator.rshift,
    "-": operator.sub,
    "/": operator.truediv,
    "^": operator.xor,
    "+=": operator.iadd,
    "&=": operator.iand,
    "//=": operator.ifloordiv,
    "<<=": operator.ilshift,
    "@=": operator.imatmul,
    "*=": operator.imul,
    "%=": operator.imod,
    "|=": operator.ior,
    "**=": operator.ipow,
    ">>=": operator.irshift,
    "-=": operator.isub,
    "/=": operator.itruediv,
    "^=": operator.ixor,
}

# dis.cmp_op's order, the same in every version; only the packing of the index differs.
COMPARISONS: tuple[t.Callable[..., object], ...] = (
    operator.lt,
    operator.le,
    operator.eq,
    operator.ne,
    operator.gt,
    operator.ge,
)

CONVERSIONS: dict[int, t.Callable[[object], str]] = {1: str, 2: repr, 3: ascii}

_GENERATOR = (
    "'yield from' or .send() into a generator",
    "loop over the inner iterable and yield each value",
)
_ASYNC = ("an async function", "differentiate a plain (synchronous) function")
_MATCH = ("a match statement", "use if/elif with isinstance() and len() instead")
_SCOPE = ("module or class level code", "differentiate a function")

# Opcodes that mean a construct we cannot differentiate, whichever version emits them.
UNSUPPORTED: dict[str, tuple[str, str]] = {
    "CHECK_EG_MATCH": (
        "an 'except*' clause (exception groups)",
        "catch the ExceptionGroup with a plain 'except' and look into its exceptions",
    ),
    "PREP_RERAISE_STAR": (
        "an 'except*' clause (exception groups)",
        "catch the ExceptionGroup with a plain 'except' and look into its exceptions",
    ),
    "SEND": _GENERATOR,
    "GET_YIELD_FROM_ITER": _GENERATOR,
    "END_SEND": _GENERATOR,
    "CLEANUP_THROW": _GENERATOR,
    "GET_AWAITABLE": _ASYNC,
    "GET_AITER": _ASYNC,
    "GET_ANEXT": _ASYNC,
    "END_ASYNC_FOR": _ASYNC,
    "BEFORE_ASYNC_WITH": _ASYNC,
    "ASYNC_GEN_WRAP": _ASYNC,
    "STORE_GLOBAL": (
        "an assignment to a global variable",
        "return the new value and assign the global outside the differentiated function",
    ),
    "DELETE_GLOBAL": (
        "a deletion of a global variable",
        "delete the global outside the differentiated function",
    ),
    "LOAD_BUILD_CLASS": ("a class definition", "define the class at module level"),
    "IMPORT_STAR": ("an import statement", "import at module level"),
    "MATCH_CLASS": _MATCH,
    "MATCH_MAPPING": _MATCH,
    "MATCH_SEQUENCE": _MATCH,
    "MATCH_KEYS": _MATCH,
    "GET_LEN": _MATCH,
    "LOAD_NAME": _SCOPE,
    "STORE_NAME": _SCOPE,
    "DELETE_NAME": _SCOPE,
    "LOAD_LOCALS": _SCOPE,
    "LOAD_CLASSDEREF": _SCOPE,
    "LOAD_FROM_DICT_OR_DEREF": _SCOPE,
    "LOAD_FROM_DICT_OR_GLOBALS": _SCOPE,
    "SETUP_ANNOTATIONS": _SCOPE,
    "PRINT_EXPR": _SCOPE,
}


def unsupported(opname: str) -> ops.Unsupported:
    construct, hint = UNSUPPORTED.get(
        opname,
        (
            f"the bytecode instruction {opname}",
            "gibbous does not support this construct yet; rewrite the code around it",
        ),
    )
    return ops.Unsupported(construct, hint)


def _name(i: dis.Instruction) -> str:
    return t.cast(str, i.argval)


def _arg(i: dis.Instruction) -> int:
    assert i.arg is not None
    return i.arg


def _one(make: t.Callable[[dis.Instruction], ops.Op]) -> Handler:
    return lambda i, _state: [make(i)]


def _fixed(*made: ops.Op) -> Handler:
    return lambda _i, _state: list(made)


def binary_op(i: dis.Instruction, _state: DecodeState) -> list[ops.Op]:
    return [ops.BinaryOp(BINARY_OPERATORS[i.argrepr])]


def unpack_ex(i: dis.Instruction, _state: DecodeState) -> list[ops.Op]:
    return [ops.UnpackEx(_arg(i) & 0xFF, _arg(i) >> 8)]


def make_function_with_flags(i: dis.Instruction, _state: DecodeState) -> list[ops.Op]:
    """3.11/3.12 MAKE_FUNCTION(flags) as 3.13 spells it: the attributes pushed last go first."""
    flags = _arg(i)
    return [ops.MakeFunction()] + [ops.SetFunctionAttribute(f) for f in (8, 4, 2, 1) if flags & f]


def format_value_with_flags(i: dis.Instruction, _state: DecodeState) -> list[ops.Op]:
    """3.11/3.12 FORMAT_VALUE(flags) as 3.13 spells it: convert first, then format."""
    conversion, has_spec = _arg(i) & 3, bool(_arg(i) & 4)
    if not conversion:
        return [ops.FormatValue(has_spec)]
    convert = ops.ConvertValue(CONVERSIONS[conversion])
    if not has_spec:
        return [convert, ops.FormatValue(False)]
    # The spec is already on top of the value: convert beneath it.
    return [ops.Swap(2), convert, ops.Swap(2), ops.FormatValue(True)]


def jump(i: dis.Instruction, _state: DecodeState) -> list[ops.Op]:
    return [ops.Jump(t.cast(int, i.argval))]


def pop_jump_if(value: bool, none_check: bool = False) -> Handler:
    return lambda i, _state: [ops.PopJumpIf(value, t.cast(int, i.argval), none_check)]


def call_intrinsic_1(i: dis.Instruction, _state: DecodeState) -> list[ops.Op]:
    # 3.12+: intrinsics are named by argrepr; only two are expressions we support.
    if i.argrepr == "INTRINSIC_LIST_TO_TUPLE":
        return [ops.ListToTuple()]
    if i.argrepr == "INTRINSIC_UNARY_POSITIVE":
        return [ops.UnaryOp(operator.pos)]
    if i.argrepr == "INTRINSIC_STOPITERATION_ERROR":
        return [unsupported("SEND")]
    if i.argrepr == "INTRINSIC_IMPORT_STAR":
        return [unsupported("IMPORT_STAR")]
    return [unsupported(f"CALL_INTRINSIC_1 {i.argrepr}")]


def kw_names(i: dis.Instruction, state: DecodeState) -> list[ops.Op]:
    """3.11/3.12: the keyword names of the next CALL; we push them as that CALL's top slot."""
    state.kwnames_pending = True
    return [ops.LoadConst(state.code.co_consts[_arg(i)])]


def call_after_kw_names(i: dis.Instruction, state: DecodeState) -> list[ops.Op]:
    kw, state.kwnames_pending = state.kwnames_pending, False
    return [ops.Call(_arg(i), kw)]


SHARED: dict[str, Handler] = {
    "IMPORT_NAME": lambda i, _s: [ops.ImportName(t.cast(str, i.argval))],
    "IMPORT_FROM": lambda i, _s: [ops.ImportFrom(t.cast(str, i.argval))],
    "NOP": _fixed(ops.Nop()),
    "RESUME": _fixed(ops.Nop()),
    "CACHE": _fixed(ops.Nop()),
    "EXTENDED_ARG": _fixed(ops.Nop()),  # dis has already folded it into the next argument
    "POP_TOP": _fixed(ops.Pop()),
    "PUSH_NULL": _fixed(ops.PushNull()),
    "LOAD_CONST": _one(lambda i: ops.LoadConst(i.argval)),
    "LOAD_FAST": _one(lambda i: ops.LoadFast(_name(i))),
    "LOAD_CLOSURE": _one(lambda i: ops.LoadFast(_name(i))),  # the cell itself
    "STORE_FAST": _one(lambda i: ops.StoreFast(_name(i))),
    "DELETE_FAST": _one(lambda i: ops.DeleteFast(_name(i))),
    "MAKE_CELL": _one(lambda i: ops.MakeCell(_name(i))),
    "COPY_FREE_VARS": _one(lambda i: ops.CopyFreeVars(_arg(i))),
    "LOAD_DEREF": _one(lambda i: ops.LoadDeref(_name(i))),
    "STORE_DEREF": _one(lambda i: ops.StoreDeref(_name(i))),
    "DELETE_DEREF": _one(lambda i: ops.DeleteDeref(_name(i))),
    "STORE_ATTR": _one(lambda i: ops.StoreAttr(_name(i))),
    "DELETE_ATTR": _one(lambda i: ops.DeleteAttr(_name(i))),
    "BINARY_OP": binary_op,
    "UNARY_NEGATIVE": _fixed(ops.UnaryOp(operator.neg)),
    "UNARY_NOT": _fixed(ops.UnaryOp(operator.not_)),
    "UNARY_INVERT": _fixed(ops.UnaryOp(operator.invert)),
    "IS_OP": _one(lambda i: ops.IsOp(bool(_arg(i)))),
    "CONTAINS_OP": _one(lambda i: ops.ContainsOp(bool(_arg(i)))),
    "BINARY_SUBSCR": _fixed(ops.GetItem()),
    "STORE_SUBSCR": _fixed(ops.SetItem()),
    "DELETE_SUBSCR": _fixed(ops.DelItem()),
    "BUILD_SLICE": _one(lambda i: ops.BuildSlice(_arg(i))),
    "BUILD_TUPLE": _one(lambda i: ops.BuildTuple(_arg(i))),
    "BUILD_LIST": _one(lambda i: ops.BuildList(_arg(i))),
    "BUILD_SET": _one(lambda i: ops.BuildSet(_arg(i))),
    "BUILD_MAP": _one(lambda i: ops.BuildMap(_arg(i))),
    "BUILD_CONST_KEY_MAP": _one(lambda i: ops.BuildConstKeyMap(_arg(i))),
    "BUILD_STRING": _one(lambda i: ops.BuildString(_arg(i))),
    "LIST_APPEND": _one(lambda i: ops.ListAppend(_arg(i))),
    "LIST_EXTEND": _one(lambda i: ops.ListExtend(_arg(i))),
    "SET_ADD": _one(lambda i: ops.SetAdd(_arg(i))),
    "SET_UPDATE": _one(lambda i: ops.SetUpdate(_arg(i))),
    "MAP_ADD": _one(lambda i: ops.MapAdd(_arg(i))),
    "DICT_UPDATE": _one(lambda i: ops.DictUpdate(_arg(i))),
    "DICT_MERGE": _one(lambda i: ops.DictMerge(_arg(i))),
    "UNPACK_SEQUENCE": _one(lambda i: ops.UnpackSequence(_arg(i))),
    "UNPACK_EX": unpack_ex,
    "GET_ITER": _fixed(ops.GetIter()),
    "JUMP_FORWARD": jump,
    "JUMP_BACKWARD": jump,
    "JUMP_BACKWARD_NO_INTERRUPT": jump,
    "RETURN_VALUE": _fixed(ops.Return()),
    "RAISE_VARARGS": _one(lambda i: ops.Raise(_arg(i))),
    "COPY": _one(lambda i: ops.Copy(_arg(i))),
    "SWAP": _one(lambda i: ops.Swap(_arg(i))),
    "LOAD_ASSERTION_ERROR": _fixed(ops.LoadConst(AssertionError)),
    "CALL_FUNCTION_EX": _one(lambda i: ops.CallEx(bool(_arg(i) & 1))),
    "RETURN_GENERATOR": _fixed(ops.ReturnGenerator()),
    "YIELD_VALUE": _fixed(ops.Yield()),
    "RERAISE": _fixed(ops.Reraise()),
    "PUSH_EXC_INFO": _fixed(ops.PushExcInfo()),
    "POP_EXCEPT": _fixed(ops.PopExcept()),
    "CHECK_EXC_MATCH": _fixed(ops.CheckExcMatch()),
    "BEFORE_WITH": _fixed(ops.BeforeWith()),
    "WITH_EXCEPT_START": _fixed(ops.WithExceptStart()),
}

# Opcodes that 3.12 introduced and 3.13 kept unchanged.
SINCE_312: dict[str, Handler] = {
    "LOAD_FAST_CHECK": _one(lambda i: ops.LoadFast(_name(i), checked=True)),
    "LOAD_FAST_AND_CLEAR": _one(lambda i: ops.LoadFastAndClear(_name(i))),
    "STORE_FAST_MAYBE_NULL": _one(lambda i: ops.StoreFast(_name(i))),
    "RETURN_CONST": lambda i, _s: [ops.LoadConst(i.argval), ops.Return()],
    "BINARY_SLICE": _fixed(ops.BuildSlice(2), ops.GetItem()),
    "STORE_SLICE": _fixed(ops.BuildSlice(2), ops.SetItem()),
    "CALL_INTRINSIC_1": call_intrinsic_1,
    "POP_JUMP_IF_TRUE": pop_jump_if(True),
    "POP_JUMP_IF_FALSE": pop_jump_if(False),
    "POP_JUMP_IF_NONE": pop_jump_if(True, none_check=True),
    "POP_JUMP_IF_NOT_NONE": pop_jump_if(False, none_check=True),
}


def load_super_attr(i: dis.Instruction, _state: DecodeState) -> list[ops.Op]:
    """3.12/3.13 LOAD_SUPER_ATTR: the low bit asks for a method load, the next says the
    source passed super() its two arguments."""
    load = ops.SuperAttr(_name(i), zero_args=not _arg(i) & 2)
    return [load, ops.PushNull()] if _arg(i) & 1 else [load]


def load_attr_method_bit(i: dis.Instruction, _state: DecodeState) -> list[ops.Op]:
    """3.12/3.13 LOAD_ATTR: the low bit asks for a method load (callable + self/NULL)."""
    load = ops.LoadAttr(_name(i))
    return [load, ops.PushNull()] if _arg(i) & 1 else [load]
