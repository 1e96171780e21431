"""Reductions: sums, means, products, extrema, moments, cumulative sums."""
