"""``python -m gibbous``: the command-line entry point."""

from __future__ import annotations

import argparse
import sys


def _passes() -> int:
    from gibbous.passes import registered_passes

    for name, cls in sorted(registered_passes().items()):
        print(f"{name:16} {getattr(cls, 'description', '')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gibbous", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="show what gibbous does, end to end")
    sub.add_parser("passes", help="list the registered passes, one line each")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from gibbous.demo import main as demo

        return demo()
    return _passes()


if __name__ == "__main__":
    sys.exit(main())
