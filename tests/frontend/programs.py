"""Random small Python programs, as source text, for differential tests of the frontend.

``programs()`` draws a ``Program``: the source of a module defining ``f`` (two or three
arguments: a float ``x``, an int ``n``, and sometimes a third float, int or NumPy float array),
and the kinds of its arguments, for which ``arguments(program)`` draws argument tuples.

The body: assignments, augmented assignments, tuple packing, unpacking (nested too) and swaps,
``arr[i % len(arr)] = ...``, if/elif/else, ``for``/``while`` (with ``break``, ``continue`` and
now and then ``else``), ``if c: return (...)``, ``del``, and a final ``return`` of a tuple of
locals.  Expressions: arithmetic, comparisons (chained too), ``and``/``or``/``not``,
conditional expressions, ``abs``/``min``/``max``/``float``/``int``/``len``, ``math.sin``,
``math.exp``, ``np.sin``, ``np.sum``, array items, lambdas (called at once, or held in a
variable ``g<k>`` and called later: closures over variables that change), list comprehensions
and generator expressions consumed by ``sum``/``max``, the walrus operator; lambda parameters,
comprehension and loop variables sometimes reuse (shadow) a variable of ``f``.

The body is typed by construction.  Every variable has one *kind* for its whole life
(``int``, ``float``, ``num`` for int-or-float, ``arr`` for a float array of the argument's
shape, ``fn:<param>:<result>``, or a tuple of kinds), and every expression is drawn for the
kind it must have, so most programs run to the end; they may still raise (ZeroDivisionError,
OverflowError, ValueError, UnboundLocalError or NameError on a read of a variable bound on some
paths only or deleted, TypeError once a complex number appears), and then the IR must raise
the same.  Programs always terminate and stay small:

* loops are ``for i in range(k)`` with ``k <= 4`` (a literal, ``min(n, 4)``, ``len(arr)``),
  ``for v in arr`` and ``while w < k and ...:`` whose counter ``w`` is incremented first in
  the body and assigned nowhere else, so ``continue`` cannot skip it; loops nest at most three
  deep;
* the lambda held in ``g<k>`` calls only ``g<i>`` with ``i < k``, so calls cannot recurse;
* integers cannot grow without bound: ``*`` and ``**`` of anything that may be an int are
  reduced ``% 9973``, ``**`` takes a small exponent, ``*=`` on an int takes a factor below 7,
  and ``+``/``-`` at most double a value per statement (at most a few hundred statements run).

Hypothesis shrinks toward the first option of every choice, so the first options are the
simple ones (a literal, a variable, an assignment) and a failure shrinks to a short program.
"""

from __future__ import annotations

import ast
import contextlib
import typing as t

import attrs
import numpy as np
from hypothesis import strategies as st

Kind = t.Union[str, tuple["Kind", ...]]  # "int" | "float" | "num" | "arr" | tuple of kinds

INT_MOD = 9973  # integer products are reduced modulo this prime
MAX_DEPTH = 3  # statement nesting (if/for/while)
MAX_EXPR_DEPTH = 3

HEADER = "import math\n\nimport numpy as np\n\n\n"


@attrs.frozen
class Program:
    source: str  # the whole module
    arg_names: tuple[str, ...]
    arg_kinds: tuple[str, ...]

    def __str__(self) -> str:
        return self.source


# --- AST helpers -------------------------------------------------------------------------------


def name(n: str) -> ast.expr:
    return ast.Name(id=n, ctx=ast.Load())


def store(n: str) -> ast.Name:
    return ast.Name(id=n, ctx=ast.Store())


def const(v: int | float) -> ast.expr:
    if isinstance(v, (int, float)) and (v < 0 or (v == 0 and str(v).startswith("-"))):
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-v))
    return ast.Constant(value=v)


def call(fn: str, *args: ast.expr) -> ast.expr:
    if "." in fn:
        mod, attr = fn.split(".")
        func: ast.expr = ast.Attribute(value=name(mod), attr=attr, ctx=ast.Load())
    else:
        func = name(fn)
    return ast.Call(func=func, args=list(args), keywords=[])


def binop(left: ast.expr, op: ast.operator, right: ast.expr) -> ast.expr:
    return ast.BinOp(left=left, op=op, right=right)


def wrap_int(e: ast.expr) -> ast.expr:
    """``e % 9973``: keeps an int product small."""
    return binop(e, ast.Mod(), const(INT_MOD))


ARITH: dict[str, ast.operator] = {
    "+": ast.Add(), "-": ast.Sub(), "*": ast.Mult(), "/": ast.Div(), "//": ast.FloorDiv(),
    "%": ast.Mod(), "**": ast.Pow(),
}  # fmt: skip
COMPARE: list[ast.cmpop] = [ast.Lt(), ast.LtE(), ast.Eq(), ast.NotEq(), ast.Gt(), ast.GtE()]

INT_LITERALS = [0, 1, 2, 3, -1, 5, 7, 10]
FLOAT_LITERALS = [0.0, 1.0, 0.5, 2.0, -1.5, 3.25, 1e-3, 100.0, -0.0, 1e300]


def fits(have: Kind, want: Kind) -> bool:
    """A value of kind ``have`` can be used where ``want`` is expected."""
    if have == want:
        return True
    return want == "num" and have in ("int", "float")


def join(a: Kind, b: Kind) -> Kind:
    if a == b:
        return a
    if isinstance(a, str) and isinstance(b, str) and {a, b} <= {"int", "float", "num"}:
        return "num"
    raise AssertionError(f"no join of {a} and {b}")


# --- the generator -----------------------------------------------------------------------------


class Gen:
    """Draws one program; ``kinds`` holds every variable's kind, ``bound`` the variables
    bound on every path to the statement being drawn."""

    def __init__(self, draw: st.DrawFn, arg_names: list[str], arg_kinds: list[str]) -> None:
        self.draw = draw
        self.kinds: dict[str, Kind] = dict(zip(arg_names, arg_kinds))
        self.bound: set[str] = set(arg_names)
        self.reserved: set[str] = set()  # while counters: assigned only by their loop
        self.counter = 0
        self.has_array = "arr" in arg_kinds
        self.statements = 0
        self.nested = 0  # > 0 inside a lambda or comprehension: no walrus there
        self.fn_limit: int | None = None  # inside the lambda of g<k>: call only g<i>, i < k

    # --- choices (Hypothesis shrinks toward the first option and toward small integers) ---

    def pick(self, options: t.Sequence[t.Any]) -> t.Any:
        return self.draw(st.sampled_from(options))

    def flip(self) -> bool:
        """A coin; shrinks to False."""
        return self.draw(st.booleans())

    def int_(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def rarely(self, one_in: int = 10) -> bool:
        """True now and then; shrinks to False."""
        return self.draw(st.integers(0, one_in - 1)) == one_in - 1

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def variables(self, want: Kind) -> list[str]:
        """Variables of a kind usable as ``want``: bound ones (rarely a maybe-unbound one)."""
        pool = self.bound
        if self.rarely(25):
            pool = set(self.kinds)  # may read a variable bound on some paths only
        return sorted(n for n in pool if fits(self.kinds[n], want))

    # --- expressions -------------------------------------------------------------------------

    def expr(self, want: Kind, depth: int = 0) -> ast.expr:
        if isinstance(want, tuple):
            return ast.Tuple(elts=[self.expr(k, depth + 1) for k in want], ctx=ast.Load())
        if isinstance(want, str) and want.startswith("fn:"):
            return self.lambda_(want, depth + 1)
        leaf = depth >= MAX_EXPR_DEPTH or not self.flip()
        if not leaf and want != "cond" and self.rarely(6):
            return self.scoped(want, depth + 1)
        if not leaf and isinstance(want, str) and self.rarely(4):
            fns = self.callable_functions(want)  # a function held in a variable
            if fns:
                return self.call_function(self.pick(fns), depth + 1)
        if want == "int":
            return self.int_leaf() if leaf else self.int_expr(depth + 1)
        if want == "float":
            return self.float_leaf() if leaf else self.float_expr(depth + 1)
        if want == "num":
            return self.num_leaf() if leaf else self.num_expr(depth + 1)
        if want == "arr":
            return self.arr_leaf() if leaf else self.arr_expr(depth + 1)
        if want == "cond":
            return self.num_leaf() if leaf else self.cond(depth + 1)
        raise AssertionError(want)

    def scoped(self, want: Kind, depth: int) -> ast.expr:
        """Expressions with scopes and bindings of their own: lambdas (called at once, or
        held in a variable and called later, seeing the variables they close over as they are
        then), comprehensions and generator expressions, the walrus operator."""
        form = self.pick(["lambda", "call", "comp", "walrus"])
        if form == "call":
            fns = self.callable_functions(want)
            if fns:
                return self.call_function(self.pick(fns), depth)
            form = "lambda"
        if form == "comp" and want == "num":
            return self.comprehension(depth)
        if form == "walrus" and not self.nested:
            existing = sorted(n for n, k in self.kinds.items() if k == want and n not in self.reserved)
            if existing and self.flip():
                target = self.pick(existing)
            else:
                target = self.fresh("v")
            value = self.expr(want, depth)
            self.kinds[target] = want  # bound from here on, or only on some paths: not added
            return ast.NamedExpr(target=store(target), value=value)
        param: Kind = self.pick(["float", "int", "num"])
        fn = self.lambda_(f"fn:{param}:{want}", depth)
        return ast.Call(func=fn, args=[self.expr(param, depth)], keywords=[])

    def callable_functions(self, want: Kind) -> list[str]:
        """Bound ``g<k>`` returning ``want`` that may be called here (see ``value``)."""
        return [n for n in sorted(self.bound) if str(self.kinds[n]).startswith("fn:")
                and str(self.kinds[n]).endswith(f":{want}")
                and (self.fn_limit is None or int(n[1:]) < self.fn_limit)]  # fmt: skip

    def call_function(self, fn: str, depth: int) -> ast.expr:
        param = str(self.kinds[fn]).split(":")[1]
        return ast.Call(func=name(fn), args=[self.expr(param, depth)], keywords=[])

    def lambda_(self, kind: str, depth: int) -> ast.expr:
        _, param, result = kind.split(":")
        p = self.shadowing() or self.fresh("p")
        with self.scope_variable(p, param):
            body = self.expr(result, depth)
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p)], kwonlyargs=[], kw_defaults=[],
                             defaults=[])  # fmt: skip
        return ast.Lambda(args=args, body=body)

    def shadowing(self) -> str | None:
        """Now and then, a variable of ``f`` for a lambda's parameter or a comprehension's
        variable to shadow (3.12+ inline comprehensions save and restore it)."""
        names = sorted(n for n, k in self.kinds.items() if n not in self.reserved
                       and k in ("int", "float", "num"))  # arrays stay visible  # fmt: skip
        return t.cast(str, self.pick(names)) if names and self.rarely(4) else None

    @contextlib.contextmanager
    def scope_variable(self, n: str, kind: Kind) -> t.Iterator[None]:
        """``n`` bound with ``kind`` inside a lambda or comprehension, as it was after."""
        saved, was_bound = self.kinds.get(n), n in self.bound
        self.kinds[n] = kind
        self.bound.add(n)
        self.nested += 1
        try:
            yield
        finally:
            self.nested -= 1
            if saved is None:
                del self.kinds[n]
            else:
                self.kinds[n] = saved
            if not was_bound:
                self.bound.discard(n)

    def comprehension(self, depth: int) -> ast.expr:
        """``sum([e for j in range(k)])``, ``sum(e for j in range(k) if c)``, ``max(...)``."""
        j = self.shadowing() or self.fresh("j")
        with self.scope_variable(j, "int"):
            element = self.expr("num", depth)
            ifs = [self.cond(depth)] if self.rarely(3) else []
        stop = const(self.int_(0, 3))
        gen = ast.comprehension(target=store(j), iter=call("range", stop), ifs=ifs, is_async=0)
        consumer = self.pick(["sum", "sum", "max"])
        if self.flip():
            return call(consumer, ast.GeneratorExp(elt=element, generators=[gen]))
        return call(consumer, ast.ListComp(elt=element, generators=[gen]))

    def var_or(self, want: Kind, literal: t.Callable[[], ast.expr]) -> ast.expr:
        names = self.variables(want)
        if names and self.flip():
            return name(self.pick(names))
        return literal()

    def int_leaf(self) -> ast.expr:
        return self.var_or("int", lambda: const(self.pick(INT_LITERALS)))

    def float_leaf(self) -> ast.expr:
        def literal() -> ast.expr:
            if self.rarely():
                attr = self.pick(["pi", "inf", "nan"])
                return ast.Attribute(value=name("math"), attr=attr, ctx=ast.Load())
            return const(self.pick(FLOAT_LITERALS))

        return self.var_or("float", literal)

    def num_leaf(self) -> ast.expr:
        names = self.variables("num")
        if names and self.flip():
            return name(self.pick(names))
        return self.int_leaf() if self.flip() else self.float_leaf()

    def arr_leaf(self) -> ast.expr:
        names = self.variables("arr")
        if not names:  # only drawn when an array is bound; a maybe-unbound pick may miss
            names = sorted(n for n, k in self.kinds.items() if k == "arr")
        return name(self.pick(names))

    def divisor(self, want: Kind, depth: int) -> ast.expr:
        e = self.expr(want, depth)
        if self.flip():  # guarded: abs(d) + 1 is never zero (nan aside)
            return binop(call("abs", e), ast.Add(), const(1))
        return e

    def int_expr(self, depth: int) -> ast.expr:
        form = self.pick(["+", "-", "*", "//", "%", "**", "neg", "cmp", "abs", "minmax",
                          "int", "ifexp", "andor", "not", "len"])  # fmt: skip
        if form in ("+", "-"):
            return binop(self.expr("int", depth), ARITH[form], self.expr("int", depth))
        if form == "*":
            return wrap_int(binop(self.expr("int", depth), ast.Mult(), self.expr("int", depth)))
        if form in ("//", "%"):
            return binop(self.expr("int", depth), ARITH[form], self.divisor("int", depth))
        if form == "**":
            exponent = binop(self.expr("int", depth), ast.Mod(), const(4))  # 0..3
            return wrap_int(binop(self.expr("int", depth), ast.Pow(), exponent))
        if form == "neg":
            return ast.UnaryOp(op=ast.USub(), operand=self.expr("int", depth))
        if form == "cmp":
            return self.compare(depth)
        if form == "abs":
            return call("abs", self.expr("int", depth))
        if form == "minmax":
            return call(self.pick(["min", "max"]), self.expr("int", depth), self.expr("int", depth))
        if form == "int":
            return call("int", self.expr("num", depth))
        if form == "ifexp":
            return self.ifexp("int", depth)
        if form == "andor":
            op = self.pick([ast.And(), ast.Or()])
            return ast.BoolOp(op=op, values=[self.expr("int", depth), self.expr("int", depth)])
        if form == "not":
            return ast.UnaryOp(op=ast.Not(), operand=self.expr("cond", depth))
        if form == "len" and self.has_array and self.variables("arr"):
            return call("len", self.arr_leaf())
        return self.int_leaf()

    def float_expr(self, depth: int) -> ast.expr:
        form = self.pick(["+", "-", "*", "/", "//", "%", "**", "neg", "abs", "minmax",
                          "float", "sin", "exp", "ifexp", "npsum", "npsin", "item"])  # fmt: skip
        if form in ("+", "-", "*", "//", "%"):
            # one float operand makes the result a float
            a, b = self.expr("float", depth), self.expr("num", depth)
            if self.flip():
                a, b = b, a
            if form in ("//", "%") and self.flip():
                b = binop(call("abs", b), ast.Add(), const(1))
            return binop(a, ARITH[form], b)
        if form == "/":
            return binop(self.expr("num", depth), ast.Div(), self.divisor("num", depth))
        if form == "**":
            if self.flip():
                exponent = const(self.pick([2, 0.5, 3, -1, 0]))
            else:
                exponent = self.expr("num", depth)
            return binop(self.expr("float", depth), ast.Pow(), exponent)
        if form == "neg":
            return ast.UnaryOp(op=ast.USub(), operand=self.expr("float", depth))
        if form == "abs":
            return call("abs", self.expr("float", depth))
        if form == "minmax":
            fn = self.pick(["min", "max"])
            return call(fn, self.expr("float", depth), self.expr("float", depth))
        if form == "float":
            return call("float", self.expr("num", depth))
        if form == "sin":
            return call("math.sin", self.expr("num", depth))
        if form == "exp":
            arg = self.expr("num", depth)
            if not self.rarely(5):  # bounded argument, mostly
                arg = call("min", arg, const(30.0))
            return call("math.exp", arg)
        if form == "ifexp":
            return self.ifexp("float", depth)
        if self.has_array and self.variables("arr"):
            if form == "npsum":
                return call("np.sum", self.expr("arr", depth))
            if form == "npsin":
                return call("np.sin", self.expr("float", depth))
            if form == "item":
                index = binop(self.expr("int", depth), ast.Mod(), call("len", self.arr_leaf()))
                return ast.Subscript(value=self.arr_leaf(), slice=index, ctx=ast.Load())
        return self.float_leaf()

    def num_expr(self, depth: int) -> ast.expr:
        form = self.pick(["int", "float", "+", "*", "ifexp", "minmax", "andor", "abs"])
        if form == "int":
            return self.int_expr(depth)
        if form == "float":
            return self.float_expr(depth)
        if form == "+":
            op = self.pick([ast.Add(), ast.Sub(), ast.FloorDiv(), ast.Mod()])
            return binop(self.expr("num", depth), op, self.expr("num", depth))
        if form == "*":
            op = self.pick([ast.Mult(), ast.Pow()])
            right = self.expr("num", depth)
            if isinstance(op, ast.Pow):
                right = binop(right, ast.Mod(), const(4))
            return wrap_int(binop(self.expr("num", depth), op, right))
        if form == "ifexp":
            return self.ifexp("num", depth)
        if form == "minmax":
            return call(self.pick(["min", "max"]), self.expr("num", depth), self.expr("num", depth))
        if form == "andor":
            op = self.pick([ast.And(), ast.Or()])
            return ast.BoolOp(op=op, values=[self.expr("num", depth), self.expr("num", depth)])
        return call("abs", self.expr("num", depth))

    def arr_expr(self, depth: int) -> ast.expr:
        form = self.pick(["+", "*", "-", "/", "**", "neg", "sin", "abs", "ifexp"])
        if form in ("+", "*", "-", "/"):
            a, b = self.expr("arr", depth), self.expr(self.pick(["arr", "num"]), depth)
            if self.flip():
                a, b = b, a
            return binop(a, ARITH[form], b)
        if form == "**":
            return binop(self.expr("arr", depth), ast.Pow(), const(self.pick([2, 3, 0.5])))
        if form == "neg":
            return ast.UnaryOp(op=ast.USub(), operand=self.expr("arr", depth))
        if form == "sin":
            return call("np.sin", self.expr("arr", depth))
        if form == "abs":
            return call("abs", self.expr("arr", depth))
        return self.ifexp("arr", depth)

    def ifexp(self, want: Kind, depth: int) -> ast.expr:
        return ast.IfExp(test=self.cond(depth), body=self.expr(want, depth),
                         orelse=self.expr(want, depth))  # fmt: skip

    def compare(self, depth: int) -> ast.expr:
        n = 1 if not self.rarely(4) else 2  # sometimes a chain: a < b <= c
        ops = [self.pick(COMPARE) for _ in range(n)]
        operands = [self.expr("num", depth) for _ in range(n + 1)]
        if self.has_array and self.variables("arr") and self.rarely(6):
            operands[0] = call("np.sum", self.arr_leaf())
        return ast.Compare(left=operands[0], ops=ops, comparators=operands[1:])

    def cond(self, depth: int = 0) -> ast.expr:
        """A condition: comparisons, not/and/or of conditions, or a number's truth."""
        if depth >= MAX_EXPR_DEPTH:
            return self.compare(depth)
        form = self.pick(["cmp", "cmp", "not", "and", "or", "num"])
        if form == "cmp":
            return self.compare(depth + 1)
        if form == "not":
            return ast.UnaryOp(op=ast.Not(), operand=self.cond(depth + 1))
        if form in ("and", "or"):
            op = ast.And() if form == "and" else ast.Or()
            return ast.BoolOp(op=op, values=[self.cond(depth + 1), self.cond(depth + 1)])
        if self.has_array and self.variables("arr") and self.rarely(20):
            return self.arr_leaf()  # an array's truth: ValueError unless it has one element
        return self.expr("num", depth + 1)

    # --- statements --------------------------------------------------------------------------

    def new_kind(self, functions: bool = False) -> Kind:
        kinds: list[Kind] = ["float", "int", "num"]
        if self.has_array:
            kinds.append("arr")
        if functions:
            kinds += [k for k in FUNCTION_KINDS if self.has_array or "arr" not in k]
        return t.cast(Kind, self.pick(kinds))

    def target(self) -> tuple[str, Kind]:
        """A variable to assign: an existing one (of its kind) or a new one; ``g<k>`` holds
        a function."""
        existing = sorted(n for n in self.kinds
                          if isinstance(self.kinds[n], str) and n not in self.reserved)  # fmt: skip
        if existing and self.flip():
            n = self.pick(existing)
            return n, self.kinds[n]
        kind = self.new_kind(functions=True)
        n = self.fresh("g" if str(kind).startswith("fn:") else "v")
        self.kinds[n] = kind
        return n, kind

    def value(self, target: str, kind: Kind) -> ast.expr:
        """An expression to assign to ``target``.  The lambda assigned to ``g<k>`` calls only
        ``g<i>`` with ``i < k``: however the variables are rebound, calls cannot recurse."""
        if not str(kind).startswith("fn:"):
            return self.expr(kind)
        saved, self.fn_limit = self.fn_limit, int(target[1:])
        try:
            return self.expr(kind)
        finally:
            self.fn_limit = saved

    def returnable(self, n: str) -> bool:
        """Functions are not returned: a native and a compiled lambda never compare equal."""
        return n not in self.reserved and "fn:" not in repr(self.kinds[n])

    def block(self, depth: int, loops: int, lo: int = 1, hi: int = 3) -> tuple[list[ast.stmt], bool]:
        """Statements; True if the block always ends in break/continue/return."""
        body: list[ast.stmt] = []
        for _ in range(self.int_(lo, hi)):
            if self.statements > 40:
                break
            stmt, ends = self.statement(depth, loops)
            body.extend(stmt)
            if ends:
                return body, True
        if not body:
            body.append(ast.Pass())
        return body, False

    def statement(self, depth: int, loops: int) -> tuple[list[ast.stmt], bool]:
        self.statements += 1
        forms = ["assign", "assign", "aug", "tuple"]
        if self.has_array:
            forms.append("setitem")
        if depth < MAX_DEPTH:
            forms += ["if", "for", "while"]
        if loops:
            forms += ["break", "continue"]
        forms += ["return", "del"]
        form = self.pick(forms)
        if form == "assign":
            n, kind = self.target()
            value = self.value(n, kind)
            self.bound.add(n)
            return [ast.Assign(targets=[store(n)], value=value)], False
        if form == "aug":
            return [self.augmented()], False
        if form == "tuple":
            return self.tuple_statement(), False
        if form == "setitem":
            return [self.setitem()], False
        if form == "if":
            return self.if_statement(depth, loops)
        if form == "for":
            return [self.for_statement(depth, loops)], False
        if form == "while":
            return self.while_statement(depth, loops), False
        if form in ("break", "continue"):
            jump: ast.stmt = ast.Break() if form == "break" else ast.Continue()
            if self.flip():  # guarded: if cond: break
                return [ast.If(test=self.cond(), body=[jump], orelse=[])], False
            return [jump], True
        if form == "return":
            return [ast.If(test=self.cond(), body=[self.return_statement()], orelse=[])], False
        if form == "del":
            candidates = sorted(n for n in self.bound if n not in self.reserved)
            if candidates and self.rarely(4):
                n = self.pick(candidates)
                self.bound.discard(n)
                return [ast.Delete(targets=[store(n)])], False
            return [ast.Pass()], False
        raise AssertionError(form)

    def augmented(self) -> ast.stmt:
        def candidates(pool: t.Iterable[str]) -> list[str]:
            return sorted(n for n in pool if n not in self.reserved
                          and self.kinds[n] in ("int", "float", "num", "arr"))  # fmt: skip

        # the arguments are always declared, if perhaps deleted
        pool = set(self.kinds) if self.rarely(25) else self.bound
        n = self.pick(candidates(pool) or candidates(self.kinds))
        kind = self.kinds[n]
        if kind == "int":
            op = self.pick(["+", "-", "*", "//", "%"])
            if op == "*":
                value = binop(self.expr("int"), ast.Mod(), const(7))  # a small factor
            elif op in ("//", "%"):
                value = self.divisor("int", 1)
            else:
                value = self.expr("int")
        elif kind == "arr":
            op = self.pick(["+", "*", "-", "/"])
            value = self.expr(self.pick(["num", "arr"]))
        elif kind == "float":
            op = self.pick(["+", "-", "*", "/", "//", "%", "**"])
            value = self.expr("num") if op != "**" else const(self.pick([2, 0.5, -1]))
        else:  # num: the value may be an int, so no unbounded growth and no '/'
            op = self.pick(["+", "-", "//", "%"])
            value = self.expr("int") if op in ("+", "-") else self.divisor("num", 1)
        # an augmented read of a maybe-unbound variable raises UnboundLocalError; so be it
        self.bound.add(n)
        return ast.AugAssign(target=store(n), op=ARITH[op], value=value)

    def tuple_statement(self) -> list[ast.stmt]:
        form = self.pick(["parallel", "pack", "unpack", "swap"])
        if form == "unpack":
            tuples = [n for n in sorted(self.bound) if isinstance(self.kinds[n], tuple)]
            if tuples:
                src = self.pick(tuples)
                kinds = t.cast(tuple[Kind, ...], self.kinds[src])
                fresh = [self.fresh("v") for _ in kinds]
                for n, k in zip(fresh, kinds):
                    self.kinds[n] = k
                    self.bound.add(n)
                elts: list[ast.expr] = [store(n) for n in fresh]
                return [ast.Assign(targets=[ast.Tuple(elts=elts, ctx=ast.Store())],
                                   value=name(src))]  # fmt: skip
            form = "pack"
        if form == "pack":
            kinds = tuple(self.new_kind() for _ in range(self.int_(2, 3)))
            value = self.expr(kinds)
            n = self.fresh("t")
            self.kinds[n] = kinds
            self.bound.add(n)
            return [ast.Assign(targets=[store(n)], value=value)]
        if form == "swap":
            by_kind: dict[Kind, list[str]] = {}
            for n in sorted(self.bound - self.reserved):
                by_kind.setdefault(self.kinds[n], []).append(n)
            pairs = [ns for k, ns in by_kind.items()
                     if k in ("int", "float", "num", "arr") and len(ns) >= 2]  # fmt: skip
            if pairs:
                ns = self.pick(pairs)
                a, b = self.pick(ns), self.pick(ns)
                return [ast.Assign(targets=[ast.Tuple(elts=[store(a), store(b)], ctx=ast.Store())],
                                   value=ast.Tuple(elts=[name(b), name(a)], ctx=ast.Load()))]  # fmt: skip
        # parallel: a, b = e1, e2 (values computed before either target is bound)
        targets = [self.target() for _ in range(self.int_(2, 3))]
        values = [self.value(n, k) for n, k in targets]
        for n, _ in targets:
            self.bound.add(n)
        if self.rarely(4) and len(targets) == 3:  # nested: (a, b), c = (e1, e2), e3
            lhs: ast.expr = ast.Tuple(elts=[ast.Tuple(elts=[store(targets[0][0]), store(targets[1][0])],
                                                      ctx=ast.Store()), store(targets[2][0])],
                                      ctx=ast.Store())  # fmt: skip
            rhs: ast.expr = ast.Tuple(elts=[ast.Tuple(elts=values[:2], ctx=ast.Load()), values[2]],
                                      ctx=ast.Load())  # fmt: skip
        else:
            lhs = ast.Tuple(elts=[store(n) for n, _ in targets], ctx=ast.Store())
            rhs = ast.Tuple(elts=values, ctx=ast.Load())
        return [ast.Assign(targets=[lhs], value=rhs)]

    def setitem(self) -> ast.stmt:
        arr = self.arr_leaf()
        index = binop(self.expr("int", 1), ast.Mod(), call("len", arr))
        target = ast.Subscript(value=arr, slice=index, ctx=ast.Store())
        if self.flip():
            return ast.Assign(targets=[target], value=self.expr("num"))
        return ast.AugAssign(target=target, op=ARITH[self.pick(["+", "*", "-"])],
                             value=self.expr("num"))  # fmt: skip

    def if_statement(self, depth: int, loops: int) -> tuple[list[ast.stmt], bool]:
        before = set(self.bound)
        arms: list[tuple[ast.expr | None, list[ast.stmt], bool, set[str]]] = []
        n_arms = self.int_(1, 3)  # if, if/else, if/elif/else (or if/elif)
        for i in range(n_arms):
            test = self.cond() if i == 0 or i < n_arms - 1 or self.flip() else None
            self.bound = set(before)
            body, ends = self.block(depth + 1, loops)
            arms.append((test, body, ends, self.bound))
            if test is None:
                break
        # variables bound after: bound on every arm that falls out (and on the no-else path)
        outs = [b for test, _, ends, b in arms if not ends]
        if arms[-1][0] is not None:
            outs.append(before)
        self.bound = set.intersection(*outs) if outs else set(before)
        orelse: list[ast.stmt] = []
        for test, body, _, _ in reversed(arms):
            if test is None:
                orelse = body
            else:
                orelse = [ast.If(test=test, body=body, orelse=orelse)]
        ends = not outs
        return orelse, ends

    def loop_else(self, depth: int, loops: int) -> list[ast.stmt]:
        if not self.rarely(6):
            return []
        body, _ = self.block(depth + 1, loops, 1, 2)
        return body

    def for_statement(self, depth: int, loops: int) -> ast.stmt:
        bound = self.pick(["literal", "min", "len", "array"])
        kind = "int"
        if bound == "min":
            ints = self.variables("int")
            stop = call("min", name(self.pick(ints)) if ints else const(3), const(4))
        elif bound in ("len", "array") and self.has_array and self.variables("arr"):
            stop = call("len", self.arr_leaf())
        else:
            stop = const(self.int_(0, 4))
        iterable = call("range", stop)
        if bound == "array" and isinstance(stop, ast.Call):
            iterable, kind = stop.args[0], "float"  # for v in arr: (at most 3 elements)
        # the loop variable: a new one, or now and then a variable of its kind rebound
        existing = sorted(n for n, k in self.kinds.items() if k == kind and n not in self.reserved)
        var = self.pick(existing) if existing and self.rarely(4) else self.fresh("i")
        self.kinds[var] = kind
        before = set(self.bound)
        self.bound.add(var)
        body, _ = self.block(depth + 1, loops + 1)
        self.bound = set(before)
        orelse = self.loop_else(depth, loops)
        self.bound = set(before)
        return ast.For(target=store(var), iter=iterable, body=body, orelse=orelse)

    def while_statement(self, depth: int, loops: int) -> list[ast.stmt]:
        w = self.fresh("w")
        self.kinds[w] = "int"
        self.reserved.add(w)
        self.bound.add(w)
        init = ast.Assign(targets=[store(w)], value=const(0))
        test: ast.expr = ast.Compare(left=name(w), ops=[ast.Lt()],
                                     comparators=[const(self.int_(1, 4))])  # fmt: skip
        if self.flip():
            test = ast.BoolOp(op=ast.And(), values=[test, self.cond()])
        before = set(self.bound)
        step = ast.AugAssign(target=store(w), op=ast.Add(), value=const(1))
        body, _ = self.block(depth + 1, loops + 1)
        self.bound = set(before)
        orelse = self.loop_else(depth, loops)
        self.bound = set(before)
        return [init, ast.While(test=test, body=[step, *body], orelse=orelse)]

    def return_statement(self) -> ast.stmt:
        pool = set(self.kinds) if self.rarely(10) else self.bound  # maybe unbound, rarely
        names = sorted(n for n in pool if self.returnable(n))
        names = names or sorted(n for n in self.kinds if self.returnable(n))  # the arguments
        count = self.int_(1, min(4, len(names)))
        chosen = [self.pick(names) for _ in range(count)]
        return ast.Return(value=ast.Tuple(elts=[name(n) for n in chosen], ctx=ast.Load()))


FUNCTION_KINDS: list[Kind] = ["fn:float:float", "fn:int:int", "fn:num:num", "fn:float:arr"]

ARGUMENTS: dict[str, list[str]] = {"float": ["x", "y"], "int": ["n", "k"], "arr": ["arr"]}


@st.composite
def programs(draw: st.DrawFn) -> Program:
    kinds = ["float", "int"]
    third = draw(st.sampled_from([None, "arr", "float", "int"]))
    if third is not None:
        kinds.append(third)
    names: list[str] = []
    for k in kinds:
        names.append(next(n for n in ARGUMENTS[k] if n not in names))
    gen = Gen(draw, names, kinds)
    body, ends = gen.block(0, 0, 1, 6)
    if not ends:
        body.append(gen.return_statement())
    module = ast.Module(body=body, type_ignores=[])
    ast.fix_missing_locations(module)
    text = ast.unparse(module)
    indented = "".join(f"    {line}\n" if line else "\n" for line in text.splitlines())
    source = f"{HEADER}def f({', '.join(names)}):\n{indented}"
    return Program(source, tuple(names), tuple(kinds))


# --- arguments ---------------------------------------------------------------------------------

FLOATS = st.one_of(
    st.sampled_from([0.0, 1.5, -2.0, 0.5, 3.0, -0.0, 1e300, -1e-300, float("nan"), float("inf")]),
    st.floats(-10.0, 10.0),
    st.floats(),
)
INTS = st.one_of(st.integers(-5, 10), st.integers())
ARRAYS = st.lists(st.one_of(st.floats(-10.0, 10.0), st.floats()), min_size=0, max_size=3).map(
    lambda xs: np.array(xs, dtype=np.float64)
)
STRATEGIES: dict[str, st.SearchStrategy[object]] = {"float": FLOATS, "int": INTS, "arr": ARRAYS}


def arguments(program: Program) -> st.SearchStrategy[tuple[object, ...]]:
    return st.tuples(*(STRATEGIES[k] for k in program.arg_kinds))
