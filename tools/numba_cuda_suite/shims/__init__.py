"""Modules that stand in for numba-cuda's test infrastructure and a few renamed gpunb names."""
