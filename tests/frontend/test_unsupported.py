"""Each unsupported construct raises UnsupportedConstructError naming it, its file and line."""

from __future__ import annotations

import inspect
import typing as t

import pytest

from gibbous.frontend import FrontendInternalError, UnsupportedConstructError, function_ir
from gibbous.frontend import build
from gibbous.frontend import ops
from tests.frontend import corpus, unsupported


def _expected(fn: t.Callable[..., object]) -> tuple[int, str]:
    lines, first = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if "# <- " in text:
            return first + k, text.split("# <- ")[1].strip()
    raise AssertionError(f"{fn.__name__} has no marker")


@pytest.mark.parametrize("fn", unsupported.CASES, ids=[f.__name__ for f in unsupported.CASES])
def test_unsupported_construct_is_reported(fn: t.Callable[..., object]) -> None:
    line, construct = _expected(fn)
    with pytest.raises(UnsupportedConstructError) as info:
        function_ir(fn)
    err = info.value
    assert not isinstance(err, FrontendInternalError)
    assert err.construct.startswith(construct)
    assert err.file == fn.__code__.co_filename
    assert err.line == line
    assert err.function == fn.__qualname__
    assert err.hint
    message = str(err)
    assert message.startswith(f"gibbous cannot differentiate {err.construct} (")
    assert f"{err.file}:{line} in {fn.__qualname__}): {err.hint}" in message


def test_internal_errors_name_the_function_and_line(monkeypatch: pytest.MonkeyPatch) -> None:
    original = build.FunctionBuilder._op

    def broken(self: build.FunctionBuilder, k: int, op: ops.Op) -> None:
        if isinstance(op, ops.BinaryOp):
            raise KeyError("boom")
        original(self, k, op)

    monkeypatch.setattr(build.FunctionBuilder, "_op", broken)
    fn = corpus.while_loop
    with pytest.raises(FrontendInternalError) as info:
        function_ir(fn)
    err = info.value
    lines, first = inspect.getsourcelines(fn)
    assert err.function == "while_loop" and err.file == fn.__code__.co_filename
    assert err.line == first + next(k for k, s in enumerate(lines) if "+=" in s)
    assert "KeyError" in str(err) and "bug in gibbous" in str(err)
    assert isinstance(err, UnsupportedConstructError)  # callers' fallbacks still apply


def test_only_functions_are_accepted() -> None:
    with pytest.raises(TypeError, match="expects a Python function"):
        function_ir(len)
