"""backends/numpy"""
