"""Looking inside: the IR of a function at each stage of the pipeline.

    >>> print(gibbous.inspect.code_ir(loss, W, x, stage="typed"))

(The CLI and rule tables come with the inspection tool; see docs/inspect.md when it exists.)
"""

from gibbous.inspect.stages import STAGES as STAGES
from gibbous.inspect.stages import code_ir as code_ir
