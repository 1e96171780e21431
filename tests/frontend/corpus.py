"""Small functions covering what the frontend must translate, each with sample arguments.

``CASES`` lists ``(function, args, kwargs)``; a function decorated with ``@sample(...)`` several
times has several cases.  The tests run each function natively and through its IR and compare
results, raised exceptions and the final state of mutable arguments.
"""

from __future__ import annotations

import dataclasses
import math
import typing as t

import attrs
import numpy as np

from tests.frontend.samples import collector, vec

CASES, sample = collector()


M = np.arange(12.0).reshape(3, 4)

SCALE = 3.0
OFFSET = -1.5
WEIGHTS = [0.5, 0.25, 0.25]


@dataclasses.dataclass
class Point:
    x: float
    y: float

    def norm(self) -> float:
        return math.hypot(self.x, self.y)


@attrs.define
class Box:
    lo: float
    hi: float

    def width(self) -> float:
        return self.hi - self.lo


class Pair(t.NamedTuple):
    a: float
    b: float


class Obj:
    def __init__(self, x: float) -> None:
        self.x = x
        self.y = 0
        self.items: list[float] = []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Obj) and vars(self) == vars(other)


def helper(a: float, b: float = 1.0, scale: float = 1.0) -> float:
    return (a + b) * scale


def square(x: float) -> float:
    return x * x


# --- operators -------------------------------------------------------------------------------


@sample(3.0, 2.0)
@sample(-1.5, 0.25)
def arith_floats(x, y):
    return x + y * 2.0 - x / y**2 % 3.0 // 1.5


@sample(7, 3)
@sample(-9, 4)
def arith_ints(a, b):
    return a // b, a % b, a << 2, a >> 1, a & b, a | b, a ^ b, ~a, -a, +a, a**b


@sample(True, False)
@sample(True, True)
def bools(p, q):
    return p and q, p or q, not p, p & q, p ^ q, p + q


@sample(1 + 2j, 3 - 1j)
def complex_ops(z, w):
    return z * w + z.conjugate() - abs(w), z.real, z.imag, z / w, z**2


@sample(vec(1, 2, 3), vec(0.5, -1, 2))
def array_ops(a, b):
    return np.sin(a) * b + a @ b, -a, a**2, a / (1 + b * b), +a, abs(b)


@sample(vec(1, 2, 3), vec(0.5, -1, 2))
def iadd_array(a, b):
    a += b
    a *= 2.0
    a -= b / 2
    return a


@sample(2.5)
def inplace_scalars(x):
    x += 1
    x -= 0.5
    x *= 3
    x /= 2
    x **= 2
    x //= 1
    x %= 7
    return x


@sample(1.0, 2.0)
@sample(2.0, 2.0)
def compare_ops(x, y):
    return x < y, x <= y, x == y, x != y, x > y, x >= y, x is y, x is not y


@sample(5.0)
@sample(-1.0)
@sample(0.5)
def chained_compare(x):
    return 0 < x < 10, 0 <= x <= 1 < 2, x > 0 > -x


@sample(0, 2, 3)
@sample(1, 0, 3)
@sample(1, 2, 3)
def and_or(a, b, c):
    return (a and b) or c, a or b and c, not (a and b)


@sample(vec(1, 2), vec(3, 4))
def array_compare(a, b):
    return a < b, a == b, (a < b) & (b > 2)


@sample(3.0)
@sample(-2.0)
def conditional_expr(x):
    return x if x > 0 else -x


# --- control flow ----------------------------------------------------------------------------


@sample(5.0)
@sample(-3.0)
@sample(0.0)
def if_elif_else(x):
    if x > 0:
        s = 1.0
    elif x < 0:
        s = -1.0
    else:
        s = 0.0
    return s * x


@sample(10)
def while_loop(n):
    i, total = 0, 0
    while i < n:
        total += i * i
        i += 1
    return total


@sample(20)
@sample(3)
def while_break_continue_else(n):
    i, acc = 0, []
    while i < n:
        i += 1
        if i % 2:
            continue
        if i > 10:
            break
        acc.append(i)
    else:
        acc.append(-1)
    return acc


@sample(6)
def while_true_break(n):
    k = 1
    while True:
        k *= 2
        if k > n:
            break
    return k


@sample(5)
def for_range(n):
    s = 0.0
    for i in range(n):
        s += i**2
    for j in range(1, n, 2):
        s -= j
    return s


@sample([3.0, -1.0, 7.0, 2.0])
def for_list(xs):
    best = xs[0]
    for x in xs:
        if x > best:
            best = x
    return best


@sample((1, 2, 3))
def for_tuple(t):
    out = 1
    for v in t:
        out *= v
    return out


@sample(M)
def for_array(m):
    total = np.zeros(m.shape[1])
    for row in m:
        total = total + row
    return total


@sample([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
def for_zip(xs, ys):
    return sum([x * y for x, y in zip(xs, ys)])


@sample([5.0, 6.0, 7.0])
def for_enumerate(xs):
    s = 0.0
    for i, x in enumerate(xs):
        s += i * x
    return s


@sample([1, 2, 3])
def for_reversed(xs):
    out = []
    for x in reversed(xs):
        out.append(x)
    return out


@sample({"a": 1.0, "b": 2.0})
def for_dict_items(d):
    keys, total = [], 0.0
    for k, v in d.items():
        keys.append(k)
        total += v
    for k in d:
        total += len(k)
    return keys, total, list(d.keys()), list(d.values())


@sample(4, 5)
def nested_loops(n, m):
    pairs = []
    for i in range(n):
        for j in range(m):
            if j > i:
                break
            if (i + j) % 2:
                continue
            pairs.append((i, j))
        else:
            pairs.append(("done", i))
    return pairs


@sample([1, 2, 3], 2)
@sample([1, 2, 3], 5)
def for_else(xs, target):
    for x in xs:
        if x == target:
            found = True
            break
    else:
        found = False
    return found


@sample([1, 5, 2])
@sample([0, 1])
def return_in_loop(xs):
    for x in xs:
        if x > 2:
            return x
    return None


@sample([1, 2])
@sample([])
def loop_var_after_loop(xs):
    for x in xs:
        pass
    return x  # UnboundLocalError when xs is empty


@sample(True)
@sample(False)
def maybe_unbound(flag):
    if flag:
        y = 1
    return y


@sample(3.0)
def del_local(x):
    y = x * 2
    del y
    y = x + 1
    return y


@sample([1, 2, 3, 4])
def walrus(xs):
    if (n := len(xs)) > 2:
        return n * 2
    return n


@sample(None)
@sample(4.0)
def none_checks(x):
    if x is None:
        return "none"
    if x is not None and x > 3:
        return x
    return 0


# --- calls -----------------------------------------------------------------------------------


@sample(2.0)
def call_positional_keyword(x):
    return helper(x), helper(x, 2.0), helper(x, scale=3.0), helper(a=x, b=1.0, scale=0.5)


@sample([1.0, 2.0])
def call_star_args(xs):
    return helper(*xs), helper(*xs, scale=2.0), helper(1.0, *xs[:1])


@sample(1.0, {"b": 3.0, "scale": 2.0})
def call_star_kwargs(x, kw):
    return helper(x, **kw), helper(*[x], **kw), helper(x, **kw, **{})


@sample(1.0)
@sample(1.0, 5.0, z=2.0)
def defaults(x, y=2.0, *, z=3.0):
    return x + y * z


@sample(1, 2, 3, a=4)
@sample()
def varargs(*args, **kwargs):
    return sum(args) + len(kwargs), args, sorted(kwargs)


@sample([3.0, 1.0, 2.0])
def method_calls(xs):
    lst = list(xs)
    lst.append(0.5)
    lst.sort()
    text = ", ".join([str(v) for v in lst])
    return lst, text, lst.index(3.0), "x".upper()


@sample(M)
def array_methods(m):
    return m.sum() + m.mean() * m.reshape(-1).max(), m.T.shape, m.sum(axis=0), m.astype(int).dtype


@sample(Obj(2.0))
def attr_get_set(obj):
    obj.x = obj.x * 2
    obj.y += 1
    obj.items.append(obj.x)
    return obj.x + obj.y


@sample(2.0)
def calls_user_fn(x):
    return helper(x) + square(x) + square(helper(x, b=x))


@sample(6)
def factorial(n):
    if n <= 1:
        return 1
    return n * factorial(n - 1)


@sample(10)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


@sample(3.0, scale=2.0)
def kwonly(x, *, scale):
    return x * scale


@sample([3, 1, 2])
def builtin_calls(xs):
    return (
        isinstance(xs, list),
        len(xs),
        list(range(3)),
        min(xs),
        max(xs),
        abs(-2),
        sum(xs),
        float(3),
        int(2.5),
        sorted(xs, reverse=True),
        round(2.567, 2),
        divmod(7, 2),
    )


@sample(2.0)
def print_call(x):
    print("x =", x, sep=" ")
    return x


@sample(2.0)
def globals_read(x):
    return x * SCALE + OFFSET + sum(WEIGHTS) + math.pi + np.float64(1.0) + np.linalg.norm(vec(3, 4))


# --- subscripts ------------------------------------------------------------------------------


@sample([1, 2, 3], 1)
def subscripts_int(a, i):
    v = a[i] + a[-1]
    a[0] = v
    a[i] += 10
    return v, a


@sample(np.arange(10.0))
def subscripts_slices(a):
    return a[1:3], a[::2], a[1:-1:2], a[:], a[-3:]


@sample(M)
def subscripts_tuple_slices(m):
    return m[1:, :2], m[..., 0], m[None, :, 1], m[1, 2], m[:, np.newaxis, 0]


@sample(M.copy())
def subscripts_set(m):
    m[0, :] = 1.0
    m[1:3, 1] += 2.0
    m[..., -1] = m[..., 0]
    return m


@sample(np.arange(6.0), np.array([0, 2, 4]), np.array([True, False] * 3))
def subscripts_int_bool_arrays(a, idx, mask):
    picked = a[idx] + a[mask].sum()
    a[mask] = 0.0
    return picked, a


@sample({"x": 1}, "x")
def dict_ops(d, k):
    d[k] = d.get(k, 0) + 1
    d["y"] = 2
    had = k in d
    del d[k]
    return had, d, "y" not in d


@sample([1, 2, 3], 2)
@sample([1, 2, 3], 5)
def contains(xs, v):
    return v in xs, v not in xs, v in (1, 2), v in {1, 2, 3}


@sample([1, 2])
def mutate_list(lst):
    lst.append(3)
    lst.extend([4, 5])
    lst[0] = 9
    last = lst.pop()
    del lst[1]
    return last


@sample("hello")
def string_ops(s):
    return s.upper() + s[1:] + s * 2, s[::-1], len(s)


# --- literals and unpacking ------------------------------------------------------------------


@sample(2.0)
def literals(x):
    return (x, 1), [x, 2, 3], {"a": x, "b": 1}, {x, 1}, {1, 2, 3}, [1, 2, 3], (), [], {}


@sample((1, 2), ((3, 4), 5))
def unpacking(t, nested):
    a, b = t
    (c, d), e = nested
    a, b = b, a
    return a, b, c, d, e


@sample([1, 2, 3, 4, 5])
@sample([1, 2])
def starred_unpack(xs):
    first, *middle, last = xs
    *init, tail = xs
    return first, middle, last, init, tail


@sample((1, 2, 3))
@sample([1, 2])
def unpack_mismatch(t):
    a, b = t
    return a + b


@sample([1, 2], (3,), {"k": 1})
def star_literals(a, b, d):
    return [*a, *b], (*a, 1), {**d, "x": 1}, {*a, *b}, [0, *a]


# --- comprehensions and generator expressions ------------------------------------------------


@sample([1.0, -2.0, 3.0])
def list_comp(xs):
    return [x * x for x in xs if x > 0]


@sample([5.0, 6.0])
def dict_comp(xs):
    return {i: x for i, x in enumerate(xs)}


@sample([1, 2, 2, 3])
def set_comp(xs):
    return {x % 2 for x in xs}


@sample([[1, 2], [3, 4]])
def nested_comp(m):
    return [[x * 2 for x in row] for row in m], [(i, j) for i in range(3) for j in range(i)]


@sample([1.0, 2.0, 3.0])
def genexpr_sum(xs):
    return sum(x * x for x in xs)


@sample([3.0, -1.0, 2.0])
def genexpr_consumers(xs):
    return (
        tuple(x + 1 for x in xs),
        list(x for x in xs if x > 0),
        max(abs(x) for x in xs),
        min(x for x in xs),
        any(x < 0 for x in xs),
        all(x < 0 for x in xs),
        sorted(x * 2 for x in xs),
        set(int(x) for x in xs),
        ",".join(str(x) for x in xs),
    )


@sample([1.0, 2.0], 3.0)
def genexpr_closure(xs, k):
    return sum(x * k for x in xs), sum(x * y for x in xs for y in xs if y > k / 3)


@sample([1, 2, 3])
def comprehension_keeps_outer_name(xs):
    x = "outer"
    ys = [x for x in xs]
    return x, ys


# --- closures and nested functions -----------------------------------------------------------


@sample(1.0)
def closure_basic(x):
    def inner(y):
        return x + y

    return inner(2.0) + inner(3.0)


@sample(3)
def closure_nonlocal(n):
    count = 0

    def bump(k):
        nonlocal count
        count += k

    for i in range(n):
        bump(i)
    return count


@sample([3.0, -1.0, 2.0])
def lambdas(xs):
    f = lambda a, b=2.0: a * b  # noqa: E731
    return sorted(xs, key=lambda v: -v), f(3.0), f(1.0, b=5.0)


@sample(2.0)
def nested_defaults(x):
    def g(a, b=x, *, c=x * 2):
        return a + b + c

    return g(1.0), g(1.0, 0.0), g(1.0, c=0.0)


@sample()
def late_binding():
    fs = []
    for i in range(3):
        fs.append(lambda: i)
    return [f() for f in fs]


@sample(2.0)
def closure_over_array(x):
    w = vec(1, 2, 3)

    def model(v):
        return np.sum(w * v)

    return model(x)


@sample(1.0)
def cell_argument_rebound(x):
    def get():
        return x

    x = x + 10
    return get()


# --- errors ----------------------------------------------------------------------------------


@sample(2.0)
@sample(-1.0)
def assert_positive(x):
    assert x > 0, "x must be positive"
    assert x < 100
    return x


@sample(1.0)
@sample(-1.0)
def raise_value_error(x):
    if x < 0:
        raise ValueError(f"negative: {x}")
    return x


@sample(0)
def raise_class(x):
    raise KeyError


@sample(0)
def raise_from(x):
    raise ValueError("outer") from KeyError("inner")


@sample(1.0)
def missing_global(x):
    return x + this_global_does_not_exist  # noqa: F821


# --- strings ---------------------------------------------------------------------------------


@sample(3.14159, "pi")
def fstrings(x, name):
    return f"{name}: {x:.3f} {x!r} {x!s:>10} {name!a} {x:{'>'}{8}} {'lit'}"


@sample(3.0)
def fstring_only_value(x):
    return f"{x}"


# --- objects ---------------------------------------------------------------------------------


@sample(Point(3.0, 4.0))
def dataclass_use(p):
    q = Point(p.x + 1, p.y * 2)
    p.x = 0.5
    return q, q.norm(), dataclasses.replace(q, x=1.0)


@sample(Box(1.0, 4.0))
def attrs_use(b):
    c = attrs.evolve(b, hi=b.hi * 2)
    return c.width(), b.width(), c


@sample(Pair(1.0, 2.0))
def namedtuple_use(p):
    a, b = p
    return p.a + p[1], p._replace(a=a * b), Pair(b, a), Pair(a=1.0, b=2.0).b


@sample(Obj(1.0))
def object_state(o):
    o.x += 1.0
    o.items.extend([o.x, o.x * 2])
    del o.y
    return o


# --- corners of the stack machine ------------------------------------------------------------


@sample(3.0, True)
@sample(-2.0, False)
def null_across_blocks(x, flag):
    o = Obj(x)
    o.items.append(x if flag else -x)  # the method and its NULL slot live across a branch
    return square(x if x > 0 else -x), helper(x, b=1.0 if flag else 2.0), o.items


@sample([1, 2, 3])
def cells_in_comprehension(xs):
    fs = [lambda: x for x in xs]
    gs = [lambda x=x: x for x in xs]
    return [f() for f in fs], [g() for g in gs]


@sample(5)
def recursive_closure(n):
    def rec(k):
        return 1 if k == 0 else k * rec(k - 1)

    return rec(n)


@sample(2)
def nested_nonlocal(n):
    total = 0

    def outer():
        def inner():
            nonlocal total
            total += n

        inner()
        inner()

    outer()
    return total


@sample(np.arange(6.0), 1, 4)
def slice_assign_and_augment(a, i, j):
    a[i:j] = 0.0
    a[1:3] += 5.0
    a[::2] *= 2.0
    b = a[i:j]
    lst = [1, 2, 3, 4, 5]
    lst[1:3] = [9]
    del lst[::2]
    return a, b, lst


@sample([1, 2, 3], Obj(0.0))
def assignment_targets(a, o):
    x = y = 0
    a[0], a[2] = a[2], a[0]
    o.x, a[1] = 7.0, x + y
    o.items += [1]
    return a, o


@sample([[1, 2, 3], [4, 5]])
def starred_for_target(rows):
    out = []
    for first, *rest in rows:
        out.append((first, rest))
    return out


@sample(4, 3)
def break_from_nested(n, m):
    found = None
    i = 0
    while i < n:
        for j in range(m):
            if i * j == 2:
                found = (i, j)
                break
        if found:
            break
        i += 1
    return found, i


@sample([[1, 5], [2, 7]], 6)
def return_from_nested_loops(rows, limit):
    for row in rows:
        for v in row:
            if v > limit:
                return v
    return -1


@sample(vec(1.0, 2.0))
@sample(vec(1.0))
def array_truth(a):
    if a:  # ValueError for more than one element, as in Python
        return "true"
    return "false"


@sample(1, {"b": 2})
def keywords_and_double_star(a, kw):
    return dict(a=a, **kw), helper(a, scale=2.0, **kw)


@sample([1.0, 2.0])
def print_starred(xs):
    print(*xs, sep=",", end="\n")
    return len(xs)


@sample()
def empty():
    """Only a docstring."""


@sample(3, 4)
def while_and_condition(a, b):
    n = 0
    while a > 0 and b > 0:
        a -= 1
        b -= 2
        n += 1
    else:
        n += 100
    return n, a, b


@sample(3)
def delete_in_loop(n):
    out = []
    for i in range(n):
        tmp = i * 2
        out.append(tmp)
        del tmp
    return out


@sample(M)
def ndindex_loop(m):
    s = 0.0
    for idx in np.ndindex(m.shape):
        s += m[idx] * idx[0]
    return s


@sample(2.0)
def fstring_with_expressions(x):
    return f"{x if x > 1 else -x:.2f}|{[x, x]!r}|{x:>{int(x) + 3}}"


@sample({"a": [1, 2]}, "a")
def attribute_of_subscript(d, k):
    d[k][0] += 10
    d[k].append(3)
    return d


@sample((1, (2, (3, None))))
def walk_linked(node):
    total = 0
    while node is not None:  # 3.11: POP_JUMP_BACKWARD_IF_NOT_NONE
        total += node[0]
        node = node[1]
    steps = [None, None, 5]
    k = steps.pop()
    while k is None:  # 3.11: POP_JUMP_BACKWARD_IF_NONE
        k = steps.pop()
    return total, k


@sample(1.0)
def delete_cell(x):
    def get():
        return x

    before = get()
    del x
    return before, get()  # NameError: the cell is empty now


@sample(3)
def nested_generator_and_annotations(n):
    def gen(k):  # its own IR is unsupported, but making and calling it is fine
        for i in range(k):
            yield i * i

    def typed(a: int, *, b: float = 1.0) -> float:
        return a * b

    return list(gen(n)), typed(n, b=0.5), sorted(typed.__annotations__)


@sample(1)
@sample("a")
@sample(None)
@sample(2.5)
def literal_match(x):
    match x:
        case 1:
            return "one"
        case "a" | "b":
            return "letter"
        case None:
            return "nothing"
        case _:
            return "other"


# --- numerical code (tests/frontend/corpus_numeric.py) ---------------------------------------

from tests.frontend import (  # noqa: E402
    corpus_exceptions,
    corpus_generators,
    corpus_numeric,
    corpus_style,
)

CASES.extend(corpus_numeric.CASES)
CASES.extend(corpus_exceptions.CASES)
CASES.extend(corpus_generators.CASES)
CASES.extend(corpus_style.CASES)
