"""Runs numba-cuda's cudapy test files against gpunb (`numba.cuda` resolved to `gpunb.cuda`).

Nothing of numba-cuda is stored here: the tests are read from a checkout given at run time.
"""
