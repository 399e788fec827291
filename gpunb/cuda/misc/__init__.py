"""numba.cuda.misc under gpunb: only `special` (literal_unroll) is public."""
