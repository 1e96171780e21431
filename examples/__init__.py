"""Worked examples: passes (docs/passes.md) and gradients on Dask workers (docs/ad.md); run
each file as a script."""
