"""Worked examples of passes (docs/passes.md): run each file as a script."""
