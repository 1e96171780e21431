"""Arrays: views and copies, shapes, indexing, windows, joins, set operations."""
