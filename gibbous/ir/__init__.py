"""The typed SSA IR: types, values, operations, blocks, functions, builder, text form, verifier."""

# Explicit re-exports (mypy --strict does not re-export plain imports).  The printer first:
# operations and functions print through it (``core.TEXT``).
from gibbous.ir import printer as printer
from gibbous.ir.verify import VerificationError as VerificationError
from gibbous.ir.verify import verify as verify
from gibbous.ir.parser import ParseError as ParseError
from gibbous.ir.parser import parse as parse
from gibbous.ir.parser import parse_constant as parse_constant
from gibbous.ir.parser import parse_type as parse_type
