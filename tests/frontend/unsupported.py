"""Functions using constructs gibbous cannot differentiate.  Each line that must be reported
carries a comment ``# <- construct`` naming what the error must say."""

# ruff: noqa
from __future__ import annotations

import math

G = 0


def uses_yield(n):
    yield n  # <- a generator function


def uses_yield_from(n):
    yield from range(n)  # <- a generator function


async def uses_async(x):  # <- an async function
    return x


def writes_global(x):
    global G
    G = x  # <- an assignment to a global variable


def deletes_global():
    global G
    del G  # <- a deletion of a global variable


def calls_exec(x):
    exec("y = 1")  # <- a call of exec()
    return x


def calls_eval(x):
    return eval("x + 1")  # <- a call of eval()


def calls_locals_with_cells(x):
    def inner():
        return x

    return locals()  # <- a call of locals() in a function with closure cells


def defines_class(x):
    class Inner:  # <- a class definition
        pass

    return Inner


def uses_match(x):
    match x:
        case [a, b]:  # <- a match statement
            return a + b
        case _:
            return 0


def calls_super(self):
    return super().f()  # <- a call of super() without arguments


def bare_raise(x):
    raise  # <- a bare 'raise' outside an except block


def unsupported_after_supported_code(x):
    y = x * 2
    z = math.sin(y)
    try:
        exec("z = 1")  # <- a call of exec()
    finally:
        pass
    return z


CASES = [
    uses_yield,
    uses_yield_from,
    uses_async,
    writes_global,
    deletes_global,
    calls_exec,
    calls_eval,
    calls_locals_with_cells,
    defines_class,
    uses_match,
    calls_super,
    bare_raise,
    unsupported_after_supported_code,
]
