"""numba.cuda.args: the argument hints (`In`, `Out`, `InOut`, their base `ArgHint`) and
`wrap_arg`, for dispatcher extensions written against numba-cuda's module of that name."""

from __future__ import annotations

from gpunb.runtime.arghints import ArgHint, In, InOut, Out, wrap_arg

__all__ = ["ArgHint", "In", "InOut", "Out", "wrap_arg"]
