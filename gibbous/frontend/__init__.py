"""The frontend: CPython 3.11-3.13 bytecode to untyped SSA IR (see docs/frontend.md).

    from gibbous.frontend import function_ir
    print(function_ir(loss))
"""

from gibbous.frontend.build import function_ir as function_ir
from gibbous.frontend.decode import Decoded as Decoded
from gibbous.frontend.decode import decode_ops as decode_ops
from gibbous.frontend.decode import exception_table as exception_table
from gibbous.ir.exceptions import FrontendInternalError as FrontendInternalError
from gibbous.ir.exceptions import UnsupportedConstructError as UnsupportedConstructError
