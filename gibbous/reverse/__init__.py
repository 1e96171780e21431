"""Reverse mode: the AD transform and the run-time objects of derived rules."""
