"""Neutral operations to untyped SSA IR.

Each reachable bytecode block becomes an IR block whose arguments are the stack slots live at
its entry (NULL markers excepted: they carry no value) and the locals live at its entry.  Within
a block the builder keeps the stack and the current value of every local as SSA values; each
jump passes them along.  Block arguments that turn out trivial (every predecessor passes the
same value) are removed afterwards, to a fixpoint.  A local is ``runtime.UNBOUND`` until it is
bound; a read that may see it goes through ``runtime.check_bound``, which raises
UnboundLocalError as CPython does.

The builder keeps the blocks, the stack and the locals, and dispatches on each operation; the
longer handlers live in modules of their own, as functions of the builder: ``control`` (how a
block ends), ``calls`` (names, attributes, calls, functions made), ``containers`` (literals,
unpacking) and ``generators`` (generator functions lowered to resume functions).
"""

from __future__ import annotations

import builtins
import inspect
import operator
import types
import typing as t

import numpy as np

from gibbous.frontend import blocks
from gibbous.frontend import calls, checks, containers, control, generators
from gibbous.frontend import ops as O
from gibbous.ir import runtime
from gibbous.frontend.decode import Handler, decode_ops, exception_table
from gibbous.frontend.entries import NULL, Entry, Null, Pending, constant_value
from gibbous.ir.exceptions import FrontendInternalError, UnsupportedConstructError
from gibbous.frontend.ssa import remove_trivial_arguments
from gibbous.ir.builder import Builder
from gibbous.ir.core import Block, Constant, Function, Location, Result, Value
from gibbous.ir.exceptions import caught
from gibbous.ir import names
from gibbous.ir.printer import format_constant
from gibbous.ir.types import ANY
from gibbous.infer.implementations import frozen_closure


# Calls that cannot raise (but on running out of memory): no handler edge for them.
_NO_RAISE: names.CallableSet[object] = names.CallableSet(
    [runtime.make_tuple, runtime.make_list, runtime.make_cell, runtime.closure_cell, runtime.is_stop, caught, t.cast,
     operator.is_, operator.is_not, runtime.load_frame, runtime.save_frame]
)


class FunctionBuilder:
    """Builds the IR of one function (or, with ``collect``, of a generator expression's body
    as a function returning the list of its values; with ``resume``, of a generator function's
    resume function: ``runtime.GeneratorResume``)."""

    def __init__(self, fn: types.FunctionType, collect: bool = False, resume: bool = False) -> None:
        self.fn = fn
        self.code: types.CodeType = fn.__code__
        self.collect = collect
        self.resume = resume
        self.file = self.code.co_filename
        self.line = self.code.co_firstlineno
        code = self.code
        nargs = code.co_argcount + code.co_kwonlyargcount
        nargs += bool(code.co_flags & inspect.CO_VARARGS)
        nargs += bool(code.co_flags & inspect.CO_VARKEYWORDS)
        self.arg_names = list(code.co_varnames[:nargs])
        extra = [n for n in code.co_cellvars if n not in code.co_varnames]
        self.local_names = [*code.co_varnames, *extra, *code.co_freevars]
        params = [("frame", ANY)] if resume else [(name, ANY) for name in self.arg_names]
        self.func = Function(
            f"{fn.__qualname__}.resume" if resume else fn.__qualname__,
            params,
            loc=Location(self.file, code.co_firstlineno),
        )
        # resume mode: (label, continuation block, where the value sent in goes, how many
        # values the continuation takes) for each yield
        self.continuations: list[tuple[int, Block, int, int]] = []
        self.b = Builder(self.func)
        self.unbound = Constant(runtime.UNBOUND)
        self.protected: set[int] = set()  # ids of block arguments to keep (loop items)
        self.ir_blocks: dict[int, Block] = {}
        self.values: Value | None = None  # collect mode: the list of yielded values
        # per block being built
        self.stack: list[Entry] = []
        self.locals: dict[str, Value] = {}
        self.hint: str | None = None
        self.handler: Handler | None = None  # where an exception of the current op goes

    # --- errors ------------------------------------------------------------------------------

    def unsupported(self, construct: str, hint: str) -> Exception:
        return checks.error(self.fn, construct, hint, self.line)

    # --- constants ---------------------------------------------------------------------------

    def const(self, value: object, hint: str = "const") -> Constant:
        """A constant that prints: objects without a path of their own get one registered."""
        _make_printable(value, hint)
        return Constant(value)

    def owner(self) -> Constant:
        return self.const(self.fn, self.fn.__qualname__)

    # --- the stack ---------------------------------------------------------------------------

    def push(self, entry: Entry) -> None:
        self.stack.append(entry)

    def pop(self) -> Entry:
        return self.stack.pop()

    def value(self, entry: Entry) -> Value:
        if isinstance(entry, Pending):
            return calls.make_function(self, entry)
        if isinstance(entry, Null):
            raise AssertionError("a NULL stack slot used as a value")
        return entry

    def pop_value(self) -> Value:
        return self.value(self.pop())

    def pop_values(self, n: int) -> list[Value]:
        entries = self.stack[len(self.stack) - n :]
        del self.stack[len(self.stack) - n :]
        return [self.value(e) for e in entries]

    def peek_value(self, i: int) -> Value:
        entry = self.stack[-i]
        value = self.value(entry)
        self.stack[-i] = value
        return value

    def call(self, callee: object, *args: object, kwargs: t.Mapping[str, object] | None = None,
             name: str | None = None) -> Result:
        result = self.b.call(callee, *args, kwargs=kwargs, name=name)
        if self.handler is not None and not _cannot_raise(callee):
            self._guard(result, self.handler)
        return result

    def _guard(self, result: Result, handler: Handler) -> None:
        """The call just made may raise into ``handler``: end the block with its guard and
        go on in a new block, the normal side."""
        target = self.analysis.block_at(handler.target)
        assert target.entry_stack is not None
        args = [
            self.peek_value(len(self.stack) - k)
            for k, slot in enumerate(target.entry_stack[: handler.depth])
            if slot is not blocks.Slot.NULL
        ]
        args += [self.locals.get(n, self.unbound) for n in self._live_in(target)]
        normal = self.func.add_block(after=self.b.block)
        self.b.guard(result, normal, [], self.ir_blocks[target.index], args)
        self.b.at_end(normal)

    def push_call(self, callee: object, *args: object,
                  kwargs: t.Mapping[str, object] | None = None) -> None:
        self.push(self.call(callee, *args, kwargs=kwargs, name=self.hint))

    # --- building ----------------------------------------------------------------------------

    def build(self) -> Function:
        ops = decode_ops(self.code)
        analysis = blocks.split(ops, exception_table(self.code))
        checks.check_code(self.fn, self.collect, analysis, self.resume)
        blocks.analyse(analysis, self.code, self.arg_names)
        self.analysis = analysis
        first = analysis.reachable[0]
        has_preds = self.resume or any(True for _ in analysis.graph.predecessors(first.index))
        for block in analysis.reachable:
            if block is first and not has_preds:
                self.ir_blocks[block.index] = self.func.entry
            else:
                self.ir_blocks[block.index] = self._new_block(block)
        self.b.loc = Location(self.file, self.code.co_firstlineno)
        initial: dict[str, Value] = {n: self.unbound for n in self.local_names}
        if not self.resume:
            initial.update(zip(self.arg_names, self.func.args))
        if self.collect:
            self.values = self.call(runtime.make_list, name="values")
        if has_preds and not self.resume:
            self.stack, self.locals = [], initial
            self.b.jump(self.ir_blocks[first.index], *self.edge_args(first))
        for block in analysis.reachable:
            self._build_block(block, initial if self.ir_blocks[block.index] is self.func.entry
                              else None)
        if self.resume:
            generators.dispatch(self, first, initial)
        remove_trivial_arguments(self.func, self.protected)
        checks.lazy_generator_expressions(self.func)
        return self.func


    def _new_block(self, block: blocks.Block) -> Block:
        ir = self.func.add_block()
        assert block.entry_stack is not None
        first = self.analysis.ops[block.start].op
        top_name = first.name if isinstance(first, (O.StoreFast, O.StoreDeref)) else None
        for k, slot in enumerate(self._passed(block)):
            if slot is not blocks.Slot.NULL:
                ir.add_arg(ANY, top_name if k == len(block.entry_stack) - 1 else None)
        for name in self._live_in(block):
            ir.add_arg(ANY, name)
        return ir

    def _passed(self, block: blocks.Block) -> blocks.Stack:
        """The entry stack slots that jumps pass: a handler makes its exception (and lasti)."""
        assert block.entry_stack is not None
        handler = self.analysis.handler_of.get(block.index)
        return block.entry_stack if handler is None else block.entry_stack[: handler.depth]

    def _live_in(self, block: blocks.Block) -> list[str]:
        return [n for n in self.local_names if n in block.live_in]

    def edge_args(self, target: blocks.Block) -> list[Value]:
        """The values passed to ``target``: its stack slots, then its live locals."""
        assert target.entry_stack is not None
        if target.index in self.analysis.handler_of:
            raise AssertionError("a jump into an exception handler")
        if len(self.stack) != len(target.entry_stack):
            raise AssertionError("stack depth differs from the block's entry")
        args = []
        for k, slot in enumerate(target.entry_stack):
            if slot is not blocks.Slot.NULL:
                args.append(self.peek_value(len(self.stack) - k))
        args += [self.locals.get(n, self.unbound) for n in self._live_in(target)]
        return args

    def _build_block(self, block: blocks.Block, initial: dict[str, Value] | None) -> None:
        ir = self.ir_blocks[block.index]
        self.b.at_end(ir)
        if initial is not None:
            self.stack, self.locals = [], dict(initial)
        else:
            args = iter(ir.args)
            self.stack = [NULL if s is blocks.Slot.NULL else next(args) for s in self._passed(block)]
            self.locals = {n: next(args) for n in self._live_in(block)}
        ops = self.analysis.ops
        handler = self.analysis.handler_of.get(block.index)
        if handler is not None:  # entered by an exception: lasti, then the exception
            self.b.loc = Location(self.file, ops[block.start].line)
            self.handler = None
            self.stack += [self.const(-1)] if handler.lasti else []
            self.stack.append(self.call(caught, name="exc"))
        for k in range(block.start, block.stop):
            d = ops[k]
            self.line = d.line
            self.b.loc = Location(self.file, d.line)
            self.hint = self._hint(k)
            self.handler = self.analysis.cover.get(k)
            if k == block.stop - 1 and isinstance(d.op, O.JUMPS + O.ENDS):
                control.terminate(self, block, d)
                self.handler = None
                return
            if self.resume and isinstance(d.op, O.Yield):
                generators.yield_value(self, block)
                self.handler = None
                return
            self._op(k, d.op)
        self.handler = None
        succ = self.analysis.blocks[block.edges[0][0]]
        self.b.jump(self.ir_blocks[succ.index], *self.edge_args(succ))

    def _hint(self, k: int) -> str | None:
        ops = self.analysis.ops
        nxt = ops[k + 1].op if k + 1 < len(ops) else None
        return nxt.name if isinstance(nxt, (O.StoreFast, O.StoreDeref)) else None

    # --- everything else ---------------------------------------------------------------------

    def _op(self, k: int, op: O.Op) -> None:
        match op:
            case O.Nop():
                pass
            case O.LoadConst(value=value):
                self.push(self.const(value, _hint_for(value)))
            case O.LoadFast(name=name):
                value = self.locals.get(name, self.unbound)
                if k in self.analysis.needs_check:
                    value = self.call(runtime.check_bound, value, name, name=name)
                    self.locals[name] = value
                self.push(value)
            case O.LoadFastAndClear(name=name):
                self.push(self.locals.get(name, self.unbound))
                self.locals[name] = self.unbound
            case O.StoreFast(name=name):
                self.locals[name] = self.pop_value()
            case O.DeleteFast(name=name):
                if k in self.analysis.needs_check:
                    self.call(runtime.check_bound, self.locals.get(name, self.unbound), name)
                self.locals[name] = self.unbound
            case O.LoadGlobal(name=name):
                calls.load_global(self, name)
            case O.ImportName(name=name):
                calls.import_name(self, name)
            case O.ImportFrom(name=name):
                calls.import_from(self, name)
            case O.SuperAttr(name=name, zero_args=zero_args):
                calls.super_attr(self, name, zero_args)
            case O.MakeCell(name=name):
                current = self.locals.get(name, self.unbound)
                contents = () if current is self.unbound else (current,)
                self.locals[name] = self.call(runtime.make_cell, *contents, name=f"{name}_cell")
            case O.CopyFreeVars():
                for i, name in enumerate(self.code.co_freevars):
                    self.locals[name] = self.call(runtime.closure_cell, self.owner(), i,
                                                  name=f"{name}_cell")
            case O.LoadDeref(name=name) if self._frozen(name):
                cell = self.fn.__closure__[self.code.co_freevars.index(name)]  # type: ignore[index]
                self.push(self.const(cell.cell_contents, name))
            case O.LoadDeref(name=name):
                self.push(self.call(runtime.cell_get, self.locals[name], name, *self._free(name),
                                    name=self.hint or name))
            case O.StoreDeref(name=name):
                self.call(runtime.cell_set, self.locals[name], self.pop_value())
            case O.DeleteDeref(name=name):
                self.call(runtime.cell_delete, self.locals[name], name, *self._free(name))
            case O.PushNull():
                self.push(NULL)
            case O.LoadAttr(name=name):
                calls.load_attr(self, name)
            case O.StoreAttr(name=name):
                obj = self.pop_value()
                self.call(builtins.setattr, obj, name, self.pop_value())
            case O.DeleteAttr(name=name):
                self.call(builtins.delattr, self.pop_value(), name)
            case O.GetItem():
                key = self.pop_value()
                self.push_call(operator.getitem, self.pop_value(), key)
            case O.SetItem():
                key, container, value = self.pop_value(), self.pop_value(), self.pop_value()
                self.call(operator.setitem, container, key, value)
            case O.DelItem():
                key = self.pop_value()
                self.call(operator.delitem, self.pop_value(), key)
            case O.BuildSlice(n=n):
                parts = self.pop_values(n)
                if all(isinstance(p, Constant) for p in parts):
                    self.push(self.const(slice(*(constant_value(p) for p in parts))))
                else:
                    self.push_call(builtins.slice, *parts)
            case O.BinaryOp(fn=fn) | O.Compare(fn=fn):
                b = self.pop_value()
                self.push_call(fn, self.pop_value(), b)
            case O.UnaryOp(fn=fn):
                self.push_call(fn, self.pop_value())
            case O.IsOp(invert=invert):
                b = self.pop_value()
                self.push_call(operator.is_not if invert else operator.is_, self.pop_value(), b)
            case O.ContainsOp(invert=invert):
                container = self.pop_value()
                item = self.pop_value()
                if invert:
                    found = self.call(operator.contains, container, item)
                    self.push_call(operator.not_, found)
                else:
                    self.push_call(operator.contains, container, item)
            case O.Call(argc=argc, kw=kw):
                calls.emit_call(self, argc, kw)
            case O.CallEx(has_kwargs=has_kwargs):
                mapping = [self.pop_value()] if has_kwargs else []
                sequence = self.pop_value()
                method_self: list[Value] = []
                callee = calls.pop_callee(self, method_self)
                if method_self:  # CPython always pushes NULL for f(*args)
                    raise AssertionError("CALL_FUNCTION_EX of a method and its self")
                self.push_call(runtime.call_ex, callee, sequence, *mapping)
            case O.MakeFunction():
                self.push(Pending(self.pop_value(), Location(self.file, self.line)))
                calls.made_function(self, k)
            case O.SetFunctionAttribute(flag=flag):
                pending = self.pop()
                assert isinstance(pending, Pending)
                pending.attributes[flag] = self.pop_value()
                self.push(pending)
                calls.made_function(self, k)
            case O.BuildTuple(n=n):
                self.push_call(runtime.make_tuple, *self.pop_values(n))
            case O.BuildList(n=n):
                self.push_call(runtime.make_list, *self.pop_values(n))
            case O.BuildSet(n=n):
                self.push_call(runtime.make_set, *self.pop_values(n))
            case O.BuildMap(n=n):
                self.push_call(runtime.make_dict, *self.pop_values(2 * n))
            case O.BuildConstKeyMap(n=n):
                keys = t.cast(tuple[object, ...], constant_value(self.pop_value()))
                values = self.pop_values(n)
                pairs = [x for k, v in zip(keys, values) for x in (self.const(k), v)]
                self.push_call(runtime.make_dict, *pairs)
            case O.ListAppend(i=i):
                item = self.pop_value()
                self.call(list.append, self.peek_value(i), item)
            case O.SetAdd(i=i):
                item = self.pop_value()
                self.call(set.add, self.peek_value(i), item)
            case O.MapAdd(i=i):
                value, key = self.pop_value(), self.pop_value()
                self.call(operator.setitem, self.peek_value(i), key, value)
            case O.ListExtend(i=i) | O.SetUpdate(i=i):
                containers.extend(self, k, op, i)
            case O.DictUpdate(i=i):
                other = self.pop_value()
                self.call(dict.update, self.peek_value(i), other)
            case O.DictMerge(i=i):
                other = self.pop_value()
                self.call(runtime.dict_merge, self.peek_value(i), other)
            case O.ListToTuple():
                self.push_call(builtins.tuple, self.pop_value())
            case O.UnpackSequence(n=n):
                containers.unpack(self, k, self.call(runtime.unpack, self.pop_value(), n), n)
            case O.UnpackEx(before=before, after=after):
                packed = self.call(runtime.unpack_ex, self.pop_value(), before, after)
                containers.unpack(self, k, packed, before + 1 + after)
            case O.ConvertValue(conversion=conversion):
                self.push_call(conversion, self.pop_value())
            case O.FormatValue(has_spec=has_spec):
                spec = [self.pop_value()] if has_spec else []
                self.push_call(builtins.format, self.pop_value(), *spec)
            case O.BuildString(n=n):
                self.push_call(runtime.build_string, *self.pop_values(n))
            case O.GetIter():
                self.push_call(builtins.iter, self.pop_value())
            case O.PushExcInfo():
                exc = self.pop_value()
                self.push(exc)  # the exception being handled, for a bare `raise`
                self.push(exc)
            case O.PopExcept():
                self.pop()
            case O.CheckExcMatch():
                kind = self.pop_value()
                self.push_call(runtime.exception_matches, self.peek_value(1), kind)
            case O.BeforeWith():
                manager = self.pop_value()
                exit_ = self.call(builtins.getattr, manager, "__exit__", name="exit")
                enter = self.call(builtins.getattr, manager, "__enter__", name="enter")
                self.push(exit_)
                self.push_call(enter)
            case O.WithExceptStart():
                exc, exit_func = self.peek_value(1), self.peek_value(4)
                kind = self.call(builtins.type, exc)
                traceback = self.call(builtins.getattr, exc, "__traceback__")
                self.push_call(exit_func, kind, exc, traceback)
            case O.Copy(i=i):
                self.push(self.peek_value(i))
            case O.Swap(i=i):
                self.stack[-1], self.stack[-i] = self.stack[-i], self.stack[-1]
            case O.Pop():
                self.pop()
            case O.ReturnGenerator() if self.collect or self.resume:
                self.push(self.const(None))
            case O.Yield() if self.collect:
                self.call(list.append, self.values, self.pop_value())
                self.push(self.const(None))  # what iteration sends back
            case _:
                raise AssertionError(f"the SSA builder does not handle {op!r}")

    def _frozen(self, name: str) -> bool:
        """Whether ``name`` is a free variable of a function whose cells are constants
        (``frozen_closure``), and its cell is filled."""
        if name not in self.code.co_freevars or not frozen_closure(self.fn):
            return False
        cell = t.cast(tuple[types.CellType, ...], self.fn.__closure__)[self.code.co_freevars.index(name)]
        try:
            cell.cell_contents
        except ValueError:
            return False
        return True

    def _free(self, name: str) -> tuple[bool, ...]:
        return (True,) if name in self.code.co_freevars else ()


def _cannot_raise(callee: object) -> bool:
    if isinstance(callee, Constant):
        callee = callee.value
    return callee in _NO_RAISE


def _make_printable(value: object, hint: str) -> None:
    if type(value) is np.ndarray or runtime.registered_path(value) is not None:
        return
    if type(value) is tuple:  # printed item by item
        for item in t.cast(tuple[object, ...], value):
            _make_printable(item, hint)
        return
    try:
        format_constant(value)
    except Exception:  # UnprintableError, or whatever looking for a path ran into
        # Named after where users import it from where it has such a name, so that the same
        # object prints the same whichever code met it first.
        runtime.register_object(value, names.public_name(value) or hint)


def _hint_for(value: object) -> str:
    if isinstance(value, types.CodeType):
        return f"code_{value.co_qualname}"
    return type(value).__name__


def function_ir(fn: object) -> Function:
    """The untyped SSA IR of a Python function (see docs/frontend.md).

    ``fn`` is a plain function, or the eager function of a generator expression that the IR
    of another function makes (``runtime.GenexprFunction``).  Raises UnsupportedConstructError
    for code gibbous cannot differentiate, naming the construct, the file and the line.
    """
    if isinstance(fn, runtime.GenexprFunction):
        builder = FunctionBuilder(fn.fn, collect=True)
    elif isinstance(fn, runtime.GeneratorResume):
        builder = FunctionBuilder(fn.fn, resume=True)
    elif isinstance(fn, types.FunctionType):
        builder = FunctionBuilder(fn)
    else:
        raise TypeError(f"function_ir expects a Python function, not {type(fn).__name__}")
    try:
        return builder.build()
    except UnsupportedConstructError:
        raise
    except Exception as e:
        raise FrontendInternalError(
            f"{type(e).__name__}: {e}", builder.file, builder.line, "", builder.fn.__qualname__
        ) from e
