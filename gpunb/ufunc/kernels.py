"""The gpunb kernels behind vectorize, guvectorize and reduce, generated as Python source.

Each template is an ordinary kernel in the numba.cuda dialect with a grid-stride loop, calling
the user's function as a device function (`__core__`), so the same compiler, cache and both
targets serve ufuncs as they serve @cuda.jit. Sources are registered with linecache under a
name that says what made them, so errors and the inspector read them like a user's kernel.
"""

from __future__ import annotations

import hashlib
import linecache
import math

import numpy as np

from gpunb.fusion.codegen import BLOCK


def elementwise_source(name: str, scalar_positions: tuple, nin: int, ndim: int) -> str:
    """out[idx] = core(in0[idx], in1, ...) over every element of out (C order); inputs at
    `scalar_positions` are scalars, the others arrays shaped like out (zero strides where
    broadcast)."""
    params = [f"a{k}" for k in range(nin)]
    indices = ", ".join(f"i{d}" for d in range(ndim))
    items = [p if k in scalar_positions else f"{p}[{indices}]" for k, p in enumerate(params)]
    lines = [f"def {name}({', '.join(params)}, out, n):",
             "    for flat in range(cuda.grid(1), n, cuda.gridsize(1)):"]
    lines += _unravel("flat", ndim)
    lines.append(f"        out[{indices}] = __core__({', '.join(items)})")
    return "\n".join(lines) + "\n"


def _unravel(flat: str, ndim: int, shaped: str = "out") -> list:
    """Statements setting i0..i{ndim-1} from a C-order flat index into `shaped`'s shape."""
    if ndim == 1:
        return [f"        i0 = {flat}"]
    lines = [f"        rest = {flat}"]
    for d in range(ndim - 1, 0, -1):
        lines += [f"        i{d} = rest % {shaped}.shape[{d}]",
                  f"        rest = rest // {shaped}.shape[{d}]"]
    return lines + ["        i0 = rest"]


def gufunc_source(name: str, core_dims: tuple, scalar_args: tuple, loop_ndim: int) -> str:
    """core(arg0[i0, .., :...], ...) for every index of the loop dimensions (C order, extents
    read from arg0). `core_dims` is the number of core dimensions of each argument; an argument
    in `scalar_args` has a scalar type in the signature (its element is passed); a 0-core-dim
    argument of a 1-d array type is passed as a 1-element slice (numba's old style for "()")."""
    params = [f"arg{k}" for k in range(len(core_dims))]
    loop = [f"i{d}" for d in range(loop_ndim)]
    items = []
    for k, (param, dims) in enumerate(zip(params, core_dims, strict=True)):
        if dims:
            items.append(f"{param}[{', '.join(loop + [':'] * dims)}]")
        elif k in scalar_args:
            items.append(f"{param}[{', '.join(loop)}]")
        else:
            last = loop[-1]
            items.append(f"{param}[{', '.join(loop[:-1] + [f'{last}:{last} + 1'])}]")
    lines = [f"def {name}({', '.join(params)}, n):",
             "    for flat in range(cuda.grid(1), n, cuda.gridsize(1)):"]
    lines += _unravel("flat", loop_ndim, "arg0")
    lines.append(f"        __core__({', '.join(items)})")
    return "\n".join(lines) + "\n"


def reduce_source(name: str, dtype: np.dtype) -> str:
    """One pass of a reduction with `__core__` as the binary function. Block b folds elements
    b*BLOCK + t + k*gridDim*BLOCK; every block has at least one element (grids are at most
    ceil(n / BLOCK)), and a block's threads with an element form a prefix, which a tree over
    that prefix combines. out[b] gets the block's value; with use_init (one-block launches only),
    out[0] = core(value, init), as numba-cuda folds its initial value in last."""
    cast = _cast(dtype)
    return f"""def {name}(arr, out, n, init, use_init):
    sh = cuda.shared.array({BLOCK}, np.{_numpy_name(dtype)})
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    step = cuda.gridDim.x * {BLOCK}
    i = b * {BLOCK} + t
    if i < n:
        acc = arr[i]
        i += step
        while i < n:
            acc = {cast}(__core__(acc, arr[i]))
            i += step
        sh[t] = acc
    cuda.syncthreads()
    valid = min({BLOCK}, n - b * {BLOCK})
    k = {BLOCK // 2}
    while k > 0:
        if t < k and t + k < valid:
            sh[t] = {cast}(__core__(sh[t], sh[t + k]))
        cuda.syncthreads()
        valid = min(valid, k)
        k //= 2
    if t == 0:
        if use_init:
            out[b] = {cast}(__core__(sh[0], init))
        else:
            out[b] = sh[0]
"""


def _numpy_name(dtype: np.dtype) -> str:
    return "bool_" if dtype.kind == "b" else dtype.name


def _cast(dtype: np.dtype) -> str:
    return f"np.{_numpy_name(dtype)}"


def compile_kernel(text: str, name: str, what: str, core, globals_of=None):
    """A gpunb kernel (Dispatcher) from generated source whose `__core__` is `core` (a device
    function). `what` names the maker in the pseudo-filename, e.g. "cuda.vectorize add"."""
    from gpunb.compiler import kernel_api
    from gpunb.jit.decorator import jit

    digest = hashlib.blake2b(text.encode(), digest_size=6).hexdigest()
    filename = f"<gpunb {what} {digest}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"__name__": "gpunb.ufunc.generated", "cuda": kernel_api, "np": np,
                 "math": math, "min": min, "__core__": core}
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - source generated here
    return jit(namespace[name])


def grid_for(kernel, args: list, work: int, target: str) -> int:
    """Blocks for `work` threads: enough to cover it, at most what the device holds at once
    (gpunb.fuse's sizing: SMs x occupancy on a GPU, a few blocks per host thread on the CPU)."""
    from gpunb.fusion.execute import resident_blocks

    wanted = -(-work // BLOCK)
    return max(1, min(wanted, resident_blocks(kernel, args, target)))


__all__ = ["BLOCK", "compile_kernel", "elementwise_source", "grid_for", "gufunc_source",
           "reduce_source"]
