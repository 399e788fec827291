"""numba.cuda.misc.special under gpunb: `literal_unroll`, also gpunb.cuda.literal_unroll."""

from gpunb.compiler.kernel_api import literal_unroll  # noqa: F401 - re-exported
