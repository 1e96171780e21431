"""The text form: parse(print(f)) gives f back, print(parse(text)) gives text back."""

from __future__ import annotations

import collections
import math
import operator
import pathlib
import re
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gibbous import ir
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import (
    BlockArgument,
    Branch,
    Call,
    Constant,
    Function,
    Jump,
    Location,
    Raise,
    Result,
    Return,
    Use,
    Value,
    structurally_equal,
)
from gibbous.ir.parser import ParseError, parse, parse_constant, parse_type
from gibbous.ir.printer import format_constant, format_type
from tests.ir.strategies import constants, functions, hashable_constants, types


def ir_text(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


def assert_round_trips(text: str) -> Function:
    f = parse(text)
    assert str(f) == text
    assert structurally_equal(parse(str(f)), f)
    assert_exact_uses(f)
    return f


def defined_values(f: Function) -> list[Value]:
    values: list[Value] = []
    for block in f.blocks:
        values.extend(block.args)
        values.extend(op.result for op in block.calls)
    return values


def assert_exact_uses(f: Function) -> None:
    """Every operand records exactly its use, and every recorded use is an operand."""
    ops = list(f.operations())
    occurrences: dict[int, int] = collections.Counter()
    for op in ops:
        for i, v in enumerate(op.operands):
            assert isinstance(v, (Constant, BlockArgument, Result)), "placeholder left behind"
            assert Use(op, i) in v.uses
            occurrences[id(v)] += 1
            if isinstance(v, Constant):
                assert v.uses == (Use(op, i),), "each constant has its own single use"
    for v in defined_values(f):
        assert len(v.uses) == occurrences[id(v)]
        for use in v.uses:
            assert use.user in ops and use.user.operands[use.index] is v


# --------------------------------------------------------------------------------------------
# (a) Random functions, types and constants round-trip


@settings(max_examples=200, deadline=None)
@given(functions())
def test_random_functions_round_trip(f: Function) -> None:
    text = str(f)
    g = parse(text)
    assert str(g) == text
    assert structurally_equal(g, f)
    assert_exact_uses(g)


@settings(max_examples=200, deadline=None)
@given(types())
def test_random_types_round_trip(ty: T.Type) -> None:
    text = format_type(ty)
    assert parse_type(text) == ty
    assert format_type(parse_type(text)) == text


@settings(max_examples=200, deadline=None)
@given(constants())
def test_random_constants_round_trip(value: object) -> None:
    text = format_constant(value)
    back = parse_constant(text)
    assert format_constant(back) == text
    assert structurally_equal(_returning(back), _returning(value))


@settings(max_examples=100, deadline=None)
@given(hashable_constants())
def test_constants_keep_their_const_type(value: object) -> None:
    back = parse_constant(format_constant(value))
    assert Constant(back).type == Constant(value).type
    assert T.Const(back) == T.Const(value)


def _returning(value: object) -> Function:
    f = Function("f")
    Builder(f).ret(value)
    return f


# --------------------------------------------------------------------------------------------
# (b) Each construct, written by hand


POLY = ir_text(
    """
    func @poly(%x: f64) loc("poly.py":3) {
    ^entry:
      %y = call operator.mul(%x, 2.0) : f64 loc("poly.py":4)
      %0 = call numpy.sin(%y) : f64 loc("poly.py":4)
      return %0 loc("poly.py":4)
    }
    """
)

LOOP = ir_text(
    """
    func @power(%x: f64, %n: i64) {
    ^entry:
      jump ^head(1.0, 0)
    ^head(%acc: f64, %i: i64):
      %c = call operator.lt(%i, %n) : bool
      branch %c, ^body, ^exit(%acc)
    ^body:
      %acc.1 = call operator.mul(%acc, %x) : f64
      %i.1 = call operator.add(%i, 1) : i64
      jump ^head(%acc.1, %i.1)
    ^exit(%r: f64):
      return %r
    }
    """
)


def test_printer_docstring_example() -> None:
    f = assert_round_trips(POLY)
    assert f.name == "poly" and f.loc == Location("poly.py", 3)
    (x,) = f.args
    y, s = f.entry.calls
    assert y.callee.type == T.Const(operator.mul) and y.args[0] is x
    assert isinstance(y.args[1], Constant) and y.args[1].value == 2.0
    assert s.callee.type == T.Const(np.sin) and s.args == (y.result,)
    ret = f.entry.terminator
    assert isinstance(ret, Return) and ret.value is s.result and ret.loc == Location("poly.py", 4)


def test_loop_with_block_arguments() -> None:
    f = assert_round_trips(LOOP)
    entry, head, body, exit_ = f.blocks
    assert [b.name for b in f.blocks] == ["entry", "head", "body", "exit"]
    assert [(a.name, a.type) for a in head.args] == [("acc", T.FLOAT), ("i", T.INT)]
    jump = entry.terminator
    assert isinstance(jump, Jump) and jump.target is head
    assert [a.value for a in jump.args if isinstance(a, Constant)] == [1.0, 0]
    branch = head.terminator
    assert isinstance(branch, Branch)
    assert branch.if_true is body and branch.true_args == ()
    assert branch.if_false is exit_ and branch.false_args == (head.args[0],)
    acc1, i1 = body.calls
    assert acc1.result.name == "acc" and i1.result.name == "i"  # the .1 is only uniquing
    back = body.terminator
    assert isinstance(back, Jump) and back.args == (acc1.result, i1.result)


def test_uses_before_definitions_and_blocks_in_any_order() -> None:
    text = ir_text(
        """
        func @f(%x: f64) {
        ^entry:
          %a = call numpy.cos(%x) : f64
          jump ^late
        ^early(%p: f64):
          %s = call operator.add(%b, %p) : f64
          return %s
        ^late:
          %b = call numpy.sin(%a) : f64
          jump ^early(%b)
        }
        """
    )
    f = assert_round_trips(text)
    assert [b.name for b in f.blocks] == ["entry", "early", "late"]
    (s,) = f.blocks[1].calls
    (b,) = f.blocks[2].calls
    assert s.args[0] is b.result
    jump = f.blocks[2].terminator
    assert isinstance(jump, Jump)
    assert set(b.result.uses) == {Use(s, 1), Use(jump, 0)}


def test_kwargs_callee_values_and_terminators() -> None:
    text = ir_text(
        """
        func @g(%f: any, %a: f64[:,:]) {
        ^entry:
          %s = call numpy.sum(%a, axis=-1, keepdims=True) : f64[:,:]
          %r = call %f(%s, "a b"=None) : any
          %c = call builtins.isinstance(%r, builtins.ValueError) : bool
          branch %c, ^bad(%r), ^good
        ^bad(%e: object<builtins.ValueError>):
          raise %e
        ^good:
          return %r
        }
        """
    )
    f = assert_round_trips(text)
    s, r, _ = f.entry.calls
    assert s.kwnames == ("axis", "keepdims") and s.args == (f.args[1],)
    assert [k.value for k in s.kwargs.values() if isinstance(k, Constant)] == [-1, True]
    assert r.callee is f.args[0] and r.kwnames == ("a b",)
    assert isinstance(f.blocks[1].terminator, Raise)


def test_whitespace_comments_and_empty_argument_lists() -> None:
    text = (
        "# a comment before the function\n"
        "\n"
        "func   @f( %x :f64 ,%y:  i64 )   {   # trailing comment\n"
        "^entry   :\n"
        "\n"
        "   %z=call   operator.add( %x ,%y ,)  :  f64   loc( \"f.py\" : 7 )\n"
        "  # a comment line\n"
        "  jump ^b()\n"
        "^b():\n"
        "\treturn %z\n"
        "}\n"
        "# after\n"
    )
    f = parse(text)
    assert str(f) == ir_text(
        """
        func @f(%x: f64, %y: i64) {
        ^entry:
          %z = call operator.add(%x, %y) : f64 loc("f.py":7)
          jump ^b
        ^b:
          return %z
        }
        """
    )
    assert_exact_uses(f)


def test_unnamed_and_quoted_names() -> None:
    text = ir_text(
        """
        func @"my func"(%0: f64, %"a b": f64, %"3": i64) {
        ^0:
          %1 = call operator.add(%0, %"a b") : f64
          jump ^"the end"(%1)
        ^"the end"(%"x.1": f64):
          return %"x.1"
        }
        """
    )
    f = assert_round_trips(text)
    assert f.name == "my func"
    assert [a.name for a in f.args] == [None, "a b", "3"]
    assert f.entry.name is None and f.blocks[1].name == "the end"
    assert f.blocks[1].args[0].name == "x.1"
    assert f.entry.calls[0].result.name is None


def test_colliding_name_hints_print_apart_and_come_back() -> None:
    f = Function("f", [("x", T.FLOAT), ("x", T.FLOAT), ("x.1", T.FLOAT), (None, T.FLOAT)])
    b = Builder(f)
    y = b.call(operator.add, f.args[0], f.args[1], name="x", type=T.FLOAT)
    b.ret(y)
    text = str(f)
    assert text.splitlines()[0] == 'func @f(%x: f64, %x.1: f64, %"x.1": f64, %0: f64) {'
    assert "%x.2 = call" in text
    g = assert_round_trips(text)
    assert [a.name for a in g.args] == ["x", "x", "x.1", None]
    assert structurally_equal(g, f)


def test_blocks_with_colliding_names() -> None:
    f = Function("f", entry_name="b")
    bld = Builder(f)
    b1 = bld.add_block("b")
    b2 = bld.add_block("b.1")
    bld.jump(b1)
    bld.at_end(b1).jump(b2)
    bld.at_end(b2).ret(None)
    text = str(f)
    assert '^b:\n  jump ^b.1\n^b.1:\n  jump ^"b.1"\n^"b.1":\n' in text
    assert structurally_equal(assert_round_trips(text), f)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("None", None),
        ("True", True),
        ("False", False),
        ("0", 0),
        ("-17", -17),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("1.5", 1.5),
        ("-0.0", -0.0),
        ("1e-05", 1e-05),
        ("-2.5e+300", -2.5e300),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ('"h\\u00e9\\n\\"q\\""', 'hé\n"q"'),
        ('"\\ud83d\\ude00"', "\U0001f600"),
        ('b"00ff10"', b"\x00\xff\x10"),
        ('b""', b""),
        ("()", ()),
        ("(1,)", (1,)),
        ('(1, "a", (None, ()))', (1, "a", (None, ()))),
        ("...", Ellipsis),
        ("slice(None, -1, 2)", slice(None, -1, 2)),
        ("complex(1.0, -2.0)", complex(1.0, -2.0)),
        ("f32(1.5)", np.float32(1.5)),
        ("i64(3)", np.int64(3)),
        ("u8(255)", np.uint8(255)),
        ("bool(True)", np.bool_(True)),
        ("c64(complex(1.0, 2.0))", np.complex64(1 + 2j)),
    ],
)
def test_constant_literals(text: str, expected: object) -> None:
    value = parse_constant(text)
    assert type(value) is type(expected)
    assert T.Const(value) == T.Const(expected)
    assert format_constant(value) == text
    if isinstance(expected, float):
        assert isinstance(value, float)
        assert math.copysign(1, value) == math.copysign(1, expected)


def test_nan_constants() -> None:
    nan = parse_constant("nan")
    assert isinstance(nan, float) and math.isnan(nan)
    z = parse_constant("complex(nan, -inf)")
    assert isinstance(z, complex) and math.isnan(z.real) and z.imag == -math.inf
    assert format_constant(parse_constant("f16(nan)")) == "f16(nan)"


@pytest.mark.parametrize(
    "text, dtype, shape",
    [
        ("array(f64, [[1.0, 2.0], [3.0, 4.0]])", "float64", (2, 2)),
        ("array(f64, 1.5)", "float64", ()),
        ("array(i32, [])", "int32", (0,)),
        ("array(bool, [[], []], shape=(2, 0))", "bool", (2, 0)),
        ("array(f32, [], shape=(0, 3))", "float32", (0, 3)),
        ("array(c128, [complex(1.0, nan)])", "complex128", (1,)),
        ('array("str96", ["ab", "\\u00e9"])', "<U3", (2,)),
        ('array("bytes16", [b"6162"])', "S2", (1,)),
        ('array("object", [(1, 2), None, numpy.sin])', "object", (3,)),
        ("array(u64, [18446744073709551615])", "uint64", (1,)),
    ],
)
def test_array_constants(text: str, dtype: str, shape: tuple[int, ...]) -> None:
    a = parse_constant(text)
    assert isinstance(a, np.ndarray) and a.dtype == np.dtype(dtype) and a.shape == shape
    assert format_constant(a) == text


def test_empty_array_shape_is_optional_where_the_rows_give_it() -> None:
    a = parse_constant("array(bool, [[], []])")
    assert isinstance(a, np.ndarray) and a.shape == (2, 0)


def test_object_array_keeps_tuples_whole() -> None:
    a = parse_constant('array("object", [(1, 2), None, numpy.sin])')
    assert isinstance(a, np.ndarray)
    assert a[0] == (1, 2) and a[1] is None and a[2] is np.sin


@pytest.mark.parametrize(
    "text, expected",
    [
        ("any", T.ANY),
        ("never", T.BOTTOM),
        ("bool", T.BOOL),
        ("str", T.STR),
        ("none", T.NONE),
        ("f64", T.FLOAT),
        ("f32", T.Float("float32")),
        ("f128", T.Float("longdouble")),
        ("i32", T.Int("int32")),
        ("u8", T.Int("uint8")),
        ("c128", T.COMPLEX),
        ('"longlong"', T.Int("longlong")),
        ("f64[:,:]", T.Array("float64", 2)),
        ("f64[]", T.Array("float64", 0)),
        ("f64[...]", T.Array("float64", None)),
        ("?[:]", T.Array(None, 1)),
        ("?[...]", T.Array(None, None)),
        ("bool[:]", T.Array("bool", 1)),
        ('"datetime64[ns]"[:]', T.Array("datetime64[ns]", 1)),
        ("tuple[]", T.Tuple(())),
        ("tuple[f64, tuple[i64]]", T.Tuple((T.FLOAT, T.Tuple((T.INT,))))),
        ("tuple<os.stat_result>[i64]", T.Tuple((T.INT,), __import__("os").stat_result)),
        ("list[f64[:]]", T.List(T.Array("float64", 1))),
        ("set[str]", T.Set(T.STR)),
        ("dict[str, list[any]]", T.Dict(T.STR, T.List(T.ANY))),
        ("object<collections.OrderedDict>", T.Object(collections.OrderedDict)),
        ("const<numpy.sin>", T.Const(np.sin)),
        ("const<(1, nan, \"s\")>", T.Const((1, math.nan, "s"))),
        ("const<slice(None, 2, None)>", T.Const(slice(None, 2, None))),
    ],
)
def test_types(text: str, expected: T.Type) -> None:
    assert parse_type(text) == expected
    assert format_type(expected) == text


def test_types_ignore_whitespace() -> None:
    assert parse_type(" dict[ str ,tuple[ f64[ : , : ] ] ] ") == T.Dict(
        T.STR, T.Tuple((T.Array("float64", 2),))
    )


def test_quoted_kwnames_and_function_names() -> None:
    f = Function("a b")
    b = Builder(f)
    y = b.call(dict, kwargs={"not an identifier": 1, "ok": 2})
    b.ret(y)
    text = str(f)
    assert 'call builtins.dict("not an identifier"=1, ok=2)' in text
    assert structurally_equal(assert_round_trips(text), f)


def test_locations_with_odd_file_names() -> None:
    for file in ['with "quotes".py', "sp ace/ünï.py", "a\\b\n\t.py", ""]:
        f = Function("f", loc=Location(file, 1))
        Builder(f).ret(1, loc=Location(file, -1))
        g = assert_round_trips(str(f))
        assert g.loc == Location(file, 1)
        assert g.entry.ops[0].loc == Location(file, -1)


def test_the_package_exports_the_parser() -> None:
    assert ir.parse is parse and ir.ParseError is ParseError
    assert issubclass(ParseError, ValueError)


# --------------------------------------------------------------------------------------------
# (c) Errors


def error_of(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text)
    return info.value


@pytest.mark.parametrize(
    "text, line, column, reason",
    [
        (
            "func @f(%x: f64) {\n^entry:\n  %y = call operator.neg(%z) : f64\n  return %y\n}\n",
            3, 26, "unknown value %z",
        ),
        ("func @f() {\n^entry:\n  jump ^nowhere\n}\n", 3, 8, "unknown block ^nowhere"),
        (
            "func @f(%x: f64) {\n^entry:\n  %x = call numpy.sin(1.0) : f64\n  return %x\n}\n",
            3, 3, "duplicate definition of %x (first defined on line 1)",
        ),
        (
            "func @f(%x: f64, %x: f64) {\n^entry:\n  return %x\n}\n",
            1, 18, "duplicate definition of %x",
        ),
        (
            "func @f() {\n^entry:\n  jump ^b\n^b:\n  jump ^b\n^b:\n  return 1\n}\n",
            6, 1, "duplicate block ^b (first labelled on line 4)",
        ),
        (
            "func @f() {\n^entry:\n  %y = call numpy.no_such_thing(1) : any\n  return %y\n}\n",
            3, 13, "import path numpy.no_such_thing: 'numpy' has no attribute 'no_such_thing'",
        ),
        (
            "func @f() {\n^entry:\n  %y = call no_such_module.f(1) : any\n  return %y\n}\n",
            3, 13, "import path no_such_module.f: no module named 'no_such_module'",
        ),
        ("func @f() {\n^entry:\n  return $\n}\n", 3, 10, "unexpected character '$'"),
        ("func @f() {\n^entry:\n  return \"abc\n}\n", 3, 10, "unterminated string"),
        ("func @f() {\n^entry:\n  return 1\n", 4, 1, "expected '}' to close the function"),
        ("func @f() {\n^entry:\n  return 1", 3, 11, "expected '}' to close the function"),
        (
            "func @f(%x: f64) {\n^entry(%x: f64):\n  return %x\n}\n",
            2, 7, "the entry block takes no argument list",
        ),
        ("func @f(%x: float) {\n^entry:\n  return %x\n}\n", 1, 13, "expected a type, got 'float'"),
        (
            "func @f() {\n^entry:\n  return 1\n}\nfunc @g() {\n",
            5, 1, "expected end of input after '}'",
        ),
        (
            "func @f() {\n^entry:\n  %y = call builtins.dict(a=1, 2) : any\n  return %y\n}\n",
            3, 32, "positional argument after keyword arguments",
        ),
        (
            "func @f() {\n^entry:\n  %y = call builtins.dict(a=1, a=2) : any\n  return %y\n}\n",
            3, 32, "keyword argument 'a' given twice",
        ),
        ("func @f() {\n^entry:\n  return 1 return 2\n}\n", 3, 12, "expected end of line"),
        ("func @f() {\n^entry:\n  retrun 1\n}\n", 3, 3, "expected an operation"),
        ("func @f() {\n^entry:\n  return (1)\n}\n", 3, 10, "a one-element tuple is written (x,)"),
        (
            "func @f() {\n^entry:\n  return array(f64, [[1.0], [2.0, 3.0]])\n}\n",
            3, 29, "rows of an array have different shapes",
        ),
        ("func @f() {\n^entry:\n  return i64(1.5)\n}\n", 3, 14, "does not fit dtype int64"),
        ("func @f() {\n^entry:\n  return i8(128)\n}\n", 3, 13, "int value does not fit dtype int8"),
        ("func @f() {\n^entry:\n  return f32(1e300)\n}\n", 3, 14, "does not fit dtype float32"),
        ('func @f() {\n^entry:\n  return array("str32", ["ab"])\n}\n', 3, 26, "fit dtype str32"),
        ("func @f() {\n^entry:\n  return 12abc\n}\n", 3, 10, "bad number"),
        ("func @f() {\n^entry:\n  return \"\\q\"\n}\n", 3, 10, "bad string literal"),
        ("func @f() {\n^entry:\n  return b\"xyz\"\n}\n", 3, 10, "bytes are written b\"<hex"),
        ("func @f(%x: \"nonsense\"[:]) {\n^entry:\n  return 1\n}\n", 1, 13, "unknown NumPy dtype"),
        (
            "func @f(%x: object<numpy.sin>) {\n^entry:\n  return 1\n}\n",
            1, 20, "numpy.sin is not a class",
        ),
        ("func @f(%x: f64[:,]) {\n^entry:\n  return 1\n}\n", 1, 19, "expected ':'"),
        ("func f() {\n^entry:\n  return 1\n}\n", 1, 6, "expected a function name"),
        ("", 1, 1, "expected 'func'"),
        ("func @f() {\n}\n", 2, 1, "expected the entry block's label"),
        ("func @f() {\n^entry:\n  return %\n}\n", 3, 10, "expected a name after '%'"),
        ("func @f() {\n^entry:\n  return 1 loc(\"f\":x)\n}\n", 3, 20, "expected a line number"),
    ],
)
def test_parse_errors(text: str, line: int, column: int, reason: str) -> None:
    e = error_of(text)
    assert (e.line, e.column) == (line, column), str(e)
    assert reason in e.reason
    message = str(e)
    assert message.startswith(f"line {line}, column {column}: ")
    source_line = text.split("\n")[line - 1]
    assert f"\n  {source_line}\n  {' ' * (column - 1)}^" in message


def test_error_message_layout() -> None:
    e = error_of("func @f() {\n^entry:\n  return %nope\n}\n")
    assert str(e) == "line 3, column 10: unknown value %nope\n    return %nope\n           ^"


def test_parser_does_not_check_arity_or_dominance() -> None:
    text = ir_text(
        """
        func @f(%x: f64) {
        ^entry:
          %y = call operator.add(%y, 1) : any
          jump ^b(%x, %x, %y)
        ^b(%a: f64):
          return %a
        }
        """
    )
    f = assert_round_trips(text)  # the verifier's business, not the parser's
    (y,) = f.entry.calls
    assert y.args[0] is y.result


def test_parse_helpers_reject_trailing_text() -> None:
    with pytest.raises(ParseError, match="end of input after the type"):
        parse_type("f64 f64")
    with pytest.raises(ParseError, match="end of input after the constant"):
        parse_constant("1 2")


# --------------------------------------------------------------------------------------------
# (d) Import paths come back as the very same objects


@pytest.mark.parametrize(
    "path, obj",
    [
        ("numpy.sin", np.sin),
        ("operator.mul", operator.mul),
        ("builtins.len", len),
        ("numpy.ndarray.sum", np.ndarray.sum),
        ("numpy.ndarray", np.ndarray),
        ("numpy", np),
        ("numpy.linalg.norm", np.linalg.norm),
        ("collections.OrderedDict", collections.OrderedDict),
        ("math.sqrt", math.sqrt),
        ("builtins.NotImplemented", NotImplemented),
    ],
)
def test_import_paths_resolve_to_the_same_object(path: str, obj: object) -> None:
    assert parse_constant(path) is obj
    assert format_constant(obj) == path


def test_bound_builtin_methods_come_back_equal_not_identical() -> None:
    reduce = parse_constant("numpy.add.reduce")
    assert reduce == np.add.reduce and reduce is not np.add.reduce
    assert T.Const(reduce) == T.Const(np.add.reduce)


def test_constant_callee_is_the_same_object_in_parsed_ir() -> None:
    f = parse(POLY)
    callees = [op.callee for op in f.calls()]
    assert [c.value for c in callees if isinstance(c, Constant)] == [operator.mul, np.sin]
    for callee, obj in zip(callees, [operator.mul, np.sin]):
        assert isinstance(callee, Constant) and callee.value is obj


# --------------------------------------------------------------------------------------------
# (e) Use lists of parsed IR are exact


def test_use_lists_are_exact_after_forward_references() -> None:
    text = ir_text(
        """
        func @f(%x: f64) {
        ^entry:
          jump ^b
        ^c(%p: f64):
          %r = call operator.add(%v, %v, %p) : f64
          return %r
        ^b:
          %v = call operator.mul(%x, %x) : f64
          branch True, ^c(%v), ^c(%v)
        }
        """
    )
    f = assert_round_trips(text)
    (x,) = f.args
    (r,) = f.blocks[1].calls
    (v,) = f.blocks[2].calls
    br = f.blocks[2].terminator
    assert isinstance(br, Branch)
    assert set(x.uses) == {Use(v, 1), Use(v, 2)}
    assert set(v.result.uses) == {Use(r, 1), Use(r, 2), Use(br, 1), Use(br, 2)}
    assert f.blocks[1].args[0].uses == (Use(r, 3),)
    assert len(r.result.uses) == 1


@settings(max_examples=50, deadline=None)
@given(functions(), st.randoms())
def test_use_lists_survive_rewrites_of_parsed_ir(f: Function, rnd: object) -> None:
    # Parsed IR is ordinary IR: replacing a value's uses leaves every list exact.
    g = parse(str(f))
    values = [v for v in defined_values(g) if v.has_uses()]
    if len(values) >= 2:
        a, b = values[0], values[-1]
        n = len(a.uses) + len(b.uses)
        a.replace_all_uses_with(b)
        assert not a.has_uses() and len(b.uses) == n
    assert_exact_uses(g)


def test_call_results_are_results_of_their_calls() -> None:
    f = parse(LOOP)
    for op in f.calls():
        assert isinstance(op, Call) and op.result.op is op and op.parent is not None


# --------------------------------------------------------------------------------------------
# The examples of docs/ir.md


def _doc_examples() -> list[str]:
    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "ir.md"
    if not doc.exists():  # pragma: no cover - an installed package without its docs
        return []
    return re.findall(r"^```ir\n(.*?)^```", doc.read_text(encoding="utf-8"), re.M | re.S)


@pytest.mark.parametrize("text", _doc_examples(), ids=lambda s: s.split("(")[0].split()[-1])
def test_docs_examples_round_trip(text: str) -> None:
    assert_round_trips(text)
