"""``python -m gibbous``: the command-line entry point.

    python -m gibbous demo
    python -m gibbous passes
    python -m gibbous ir MODULE:FUNC --args "np.ones((3, 3)), np.ones(3)" [--stage S]
                         [--format text|dot|svg|png] [-o FILE] [--passes p1,mod:Pass]
    python -m gibbous rules MODULE:FUNC --args "np.ones((3, 3)), np.ones(3)"
    python -m gibbous rules --supported [MODULE] [--write FILE]   (docs/supported.md)
    python -m gibbous facts NAME        (NAME an import path: numpy.sin, numpy.add.reduce)
    python -m gibbous audit [--write FILE | --check FILE] [--origin MODULE] [-k TEXT] [--uncovered]

A bad module, function or expression, an unsupported construct or a missing rule prints one
line and exits with status 2 (``--traceback`` shows the whole story).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import typing as t

EXIT_ERROR = 2
IR_STAGES = ("frontend", "typed", "optimized", "forward", "reverse", "jvp")
IR_FORMATS = ("text", "dot", "svg", "png")


class CLIError(Exception):
    """A mistake in what the command was asked: reported as one line."""


def _passes() -> int:
    from gibbous.passes import registered_passes

    for name, cls in sorted(registered_passes().items()):
        print(f"{name:16} {getattr(cls, 'description', '')}")
    return 0


# --------------------------------------------------------------------------------------------
# MODULE:FUNC and --args


def load_function(target: str) -> t.Callable[..., object]:
    """``package.module:function`` (or ``module:Class.method``) to the callable."""
    module_name, sep, qualname = target.partition(":")
    if not sep or not module_name or not qualname:
        raise CLIError(f"expected MODULE:FUNC (like mypackage.losses:loss), got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is not None and module_name.startswith(e.name):
            raise CLIError(f"no module named {module_name!r} (is it on sys.path?)") from e
        raise CLIError(f"cannot import {module_name!r}: {e}") from e
    except Exception as e:
        raise CLIError(f"cannot import {module_name!r}: {type(e).__name__}: {e}") from e
    obj: object = module
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CLIError(f"module {module_name!r} has no function {qualname!r}") from None
    if not callable(obj):
        raise CLIError(f"{target} is not callable but {type(obj).__name__}")
    return obj


def evaluate_args(text: str) -> tuple[object, ...]:
    """``--args "np.ones((3, 3)), 2.0"``: Python expressions, with ``numpy as np`` in scope."""
    import numpy as np

    if not text.strip():
        return ()
    scope = {"np": np, "numpy": np}
    try:
        value = eval(f"({text},)", scope)  # noqa: S307 -- the user's own command line
    except SyntaxError as e:
        raise CLIError(f"bad --args expression {text!r}: {e.msg}") from e
    except Exception as e:
        raise CLIError(f"bad --args expression {text!r}: {type(e).__name__}: {e}") from e
    return t.cast(tuple[object, ...], value)


def resolve_passes(text: str | None) -> list[t.Any] | None:
    """``--passes fold,dce,mypkg.passes:MyPass``: registered names as they are, and
    ``MODULE:NAME`` for a pass class or factory, called with no arguments (None: no option)."""
    if not text:
        return None
    from gibbous.passes import parse_pipeline

    pipeline: list[t.Any] = []
    for item in parse_pipeline(text):
        if ":" not in item:
            pipeline.append(item)  # the pass manager looks the name up
            continue
        try:
            make = load_function(item)
        except CLIError as e:
            raise CLIError(f"--passes {item}: {e}") from e
        try:
            made = make()
        except Exception as e:
            raise CLIError(f"--passes {item}: calling it raised {type(e).__name__}: {e}") from e
        name, run = getattr(made, "name", None), getattr(made, "run", None)
        if not (isinstance(name, str) and callable(run)):
            raise CLIError(
                f"--passes {item}: calling it gave a {type(made).__name__}, not a pass "
                "(a pass has a name and a run(f) method)"
            )
        pipeline.append(made)
    return pipeline


# --------------------------------------------------------------------------------------------
# ir and rules


def _ir(args: argparse.Namespace) -> int:
    from gibbous.inspect import code_ir, render

    f = load_function(args.target)
    values = evaluate_args(args.args)
    passes = resolve_passes(args.passes)
    ir = code_ir(f, *values, stage=args.stage, passes=passes)
    output: str | bytes = str(ir) if args.format == "text" else render(ir, args.format)
    if args.output is not None:
        mode = "wb" if isinstance(output, bytes) else "w"
        with open(args.output, mode) as file:
            file.write(output)
    elif isinstance(output, bytes):
        if sys.stdout.isatty():
            raise CLIError("PNG is binary: write it to a file with -o FILE")
        sys.stdout.flush()
        sys.stdout.buffer.write(output)
    else:
        sys.stdout.write(output)
    return 0


def _rules(args: argparse.Namespace) -> int:
    from gibbous.inspect import format_rule_table, rule_table

    if args.supported is not None:
        return _supported(args)
    if args.target is None:
        raise CLIError("rules: give MODULE:FUNC (or --supported [MODULE])")
    f = load_function(args.target)
    values = evaluate_args(args.args)
    passes = resolve_passes(args.passes)
    rows = rule_table(f, *values, passes=passes)
    sys.stdout.write(format_rule_table(rows, inactive=not args.active_only))
    return 0


def _supported(args: argparse.Namespace) -> int:
    """The table of docs/supported.md, scanned now (minutes for all ten modules)."""
    from gibbous.audit import scan, supported

    if args.target is not None:
        raise CLIError("rules --supported takes a module (numpy.linalg), not MODULE:FUNC")
    modules = scan.MODULES if args.supported == "" else (args.supported,)
    if args.supported and args.supported not in scan.MODULES:
        raise CLIError(f"rules --supported: the scanned modules are {', '.join(scan.MODULES)}")

    def progress(line: str) -> None:
        print(f"scanned {line}", file=sys.stderr, flush=True)

    if args.write is not None:  # (one module: its rows of the page are updated)
        try:
            supported.write(args.write, modules, progress, jobs=args.jobs)
        except ValueError as e:
            raise CLIError(f"rules --supported --write: {e}") from e
        print(f"wrote {args.write}")
        return 0
    sys.stdout.write(supported.table(scan.scan(modules, progress)))
    return 0


def _facts(args: argparse.Namespace) -> int:
    from gibbous.inspect.facts import facts, format_facts
    from gibbous.ir.names import UnresolvablePath, resolve

    try:
        fn = resolve(args.name)
    except UnresolvablePath as e:
        raise CLIError(f"no callable named {args.name!r}: {e}") from None
    if not callable(fn):
        raise CLIError(f"{args.name} is not callable but {type(fn).__name__}")
    sys.stdout.write(format_facts(facts(fn)))
    return 0


def _errors() -> tuple[type[BaseException], ...]:
    """What the inspection commands report as one line."""
    from gibbous.ir.exceptions import UnsupportedConstructError
    from gibbous.inspect.render import GraphvizNotFoundError
    from gibbous.infer import InferenceError
    from gibbous.rules.registry import AmbiguousRuleError, MissingRuleError

    return (
        CLIError,
        UnsupportedConstructError,
        MissingRuleError,
        AmbiguousRuleError,
        GraphvizNotFoundError,
        InferenceError,
        TypeError,
        ValueError,
        OSError,
    )


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    first = lines[0] if lines else type(e).__name__
    if isinstance(e, CLIError):
        return first
    from gibbous.ir.exceptions import UnsupportedConstructError

    if isinstance(e, UnsupportedConstructError):
        return f"unsupported: {first}"
    if isinstance(e, (TypeError, ValueError, OSError)):
        return f"{type(e).__name__}: {first}"
    return first


def _inspection_parser(sub: t.Any, name: str, help: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help=help)
    p.add_argument(
        "target", metavar="MODULE:FUNC", nargs=None if name == "ir" else "?",
        help="the function, e.g. mypkg.losses:loss",
    )  # fmt: skip
    p.add_argument(
        "--args",
        default="",
        metavar='"EXPR, ..."',
        help="example arguments: Python expressions, numpy as np in scope",
    )
    p.add_argument(
        "--passes",
        metavar="p1,p2",
        help="replace the standard passes: registered names, or MODULE:CLASS for your own",
    )
    p.add_argument("--traceback", action="store_true", help="show the traceback of an error")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gibbous",
        description="gibbous: reverse-mode AD for Python + NumPy through a typed SSA IR",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="show what gibbous does, end to end")
    sub.add_parser("passes", help="list the registered passes, one line each")
    ir = _inspection_parser(sub, "ir", "print the IR of a function at a stage of the pipeline")
    ir.add_argument(
        "--stage",
        choices=IR_STAGES,
        default="typed",
        help="frontend, typed, optimized, the derived rule's forward / reverse program, or "
        "the forward-mode program (jvp)",
    )
    ir.add_argument("--format", choices=IR_FORMATS, default="text", help="text, or the CFG")
    ir.add_argument("-o", "--output", metavar="FILE", help="write to FILE, not stdout")
    rules = _inspection_parser(sub, "rules", "show the rule each call site resolves to")
    rules.add_argument("--active-only", action="store_true", help="leave out inactive calls")
    rules.add_argument(
        "--supported", nargs="?", const="", metavar="MODULE",
        help="instead: scan NumPy's and SciPy's public callables (or MODULE's) in every mode "
        "and print the table of docs/supported.md (minutes)",
    )  # fmt: skip
    rules.add_argument("--write", metavar="FILE", help="with --supported: write the page to FILE")
    rules.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="with --write: scan in N processes"
    )  # fmt: skip
    facts = sub.add_parser("facts", help="what the library knows about a callable")
    facts.add_argument("name", metavar="NAME", help="its import path, e.g. numpy.sin")
    facts.add_argument("--traceback", action="store_true", help="show the traceback of an error")
    sub.add_parser("audit", help="run the rule audit (python -m gibbous audit --help)")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["audit"]:  # its options are gibbous.audit's own
        from gibbous.audit.__main__ import main as audit

        return audit(argv[1:], prog="python -m gibbous audit")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from gibbous.demo import main as demo

        return demo()
    if args.command == "passes":
        return _passes()
    command = {"ir": _ir, "rules": _rules, "facts": _facts}[args.command]
    if args.traceback:
        return command(args)
    try:
        return command(args)
    except _errors() as e:
        print(f"gibbous {args.command}: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
