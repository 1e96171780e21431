"""The NumPy backend: IR functions compiled to Python source, once, and called many times.

See docs/backend.md.  ``compile_function`` runs a primal IR function; ``Factory`` puts several
functions behind one set of closure variables (the AD pass's forward and reverse programs).
"""

from gibbous.backends.numpy.codegen import (
    CompiledFactory,
    Factory,
    FunctionEmitter,
    compile_function,
)

__all__ = ["CompiledFactory", "Factory", "FunctionEmitter", "compile_function"]
