"""Hints shared by inference and the builtins' typing (kept below both, one wording each)."""

READONLY_HINT = "the array is read-only, as in numba: a global array is a constant frozen into " \
                "the code, and a numpy argument with ary.flags.writeable False may not be " \
                "written; pass a writeable array as an argument (np.array(ary) copies one)"
