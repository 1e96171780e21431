"""Worked examples: passes (docs/passes.md), the code the AD pass generates for a loop and
gradients on Dask workers (docs/ad.md); run each file as a script."""
