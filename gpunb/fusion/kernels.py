"""The kernel templates of gpunb.fuse: elementwise map, reductions, and the partials' finish.

Each function returns the Python source of one gpunb kernel and its Params. Loops are
grid-stride loops, so any grid covers any size; index arithmetic runs in uint32 when the
iteration space fits (cheaper division on the GPU) and uint64 otherwise.
"""

from __future__ import annotations

import dataclasses

from gpunb.fusion import graph as g
from gpunb.fusion.codegen import (
    BLOCK,
    Expressions,
    Params,
    collect_params,
    indent,
    literal,
    unravel,
)


@dataclasses.dataclass(frozen=True, slots=True)
class KernelSource:
    """One generated kernel: its function name, source text and parameters."""

    name: str
    text: str
    arrays: tuple           # (argument index, key) per array parameter, after `out`
    scalars: tuple          # argument index per scalar parameter


def _source(name: str, params: Params, extra: list, body: list,
            leading: tuple = ("out",)) -> KernelSource:
    header = f"def {name}({', '.join([*leading, *params.names(), *extra])}):"
    text = "\n".join([header] + indent(body)) + "\n"
    return KernelSource(name, text, tuple(params.arrays), tuple(params.scalars))


def map_kernel(name: str, root: g.Node, index_type: str) -> KernelSource:
    """out.flat[idx] = root at element idx of root's shape, C order."""
    nodes = g.walk(root)
    params = collect_params(nodes)
    exprs = Expressions(params, root.ndim)
    loop = unravel("idx", list(range(root.ndim)), root.shape, index_type)
    loop += exprs.emit(nodes)
    loop.append(f"out[idx] = {_store(exprs, root)}")
    body = ["for idx in range(cuda.grid(1), n, cuda.gridsize(1)):"] + indent(loop)
    return _source(name, params, ["shape", "n"], body)


def _store(exprs: Expressions, root: g.Node) -> str:
    if root.kind == g.CONST:
        return literal(root.value, root.dtype)
    return exprs.name(root)


# ---- reductions ---------------------------------------------------------------------------------


class ReductionParts:
    """The pieces every reduction kernel shares: the accumulator, its combine step, and the code
    after the reduction (numpy's result dtype, mean's division, the post-reduction ufuncs)."""

    def __init__(self, root: g.Node, reduce_node: g.Node):
        self.root = root
        self.node = reduce_node
        self.reduction: g.Reduction = reduce_node.value
        self.operand: g.Node = reduce_node.args[0]
        self.acc = self.reduction.acc_dtype
        self.space = self.operand.shape
        axes = self.reduction.axes
        self.kept_dims = [d for d in range(len(self.space)) if d not in axes]
        self.reduced_dims = list(axes)

    def identity(self) -> str:
        return literal(g.reduction_identity(self.reduction.op, self.acc), self.acc)

    def combine(self, acc: str, value: str) -> str:
        op, kind = self.reduction.op, self.acc.kind
        if op in ("sum", "mean"):
            expr = f"{acc} + {value}"
        elif op == "prod":
            expr = f"{acc} * {value}"
        elif op == "all" or (op == "min" and kind == "b"):
            expr = f"{acc} & {value}"
        elif op == "any" or (op == "max" and kind == "b"):
            expr = f"{acc} | {value}"
        elif kind == "f":
            expr = f"{'maximum' if op == 'max' else 'minimum'}({acc}, {value})"
        else:
            expr = f"{op}({acc}, {value})"
        return f"{self.acc.name}({expr})"

    def element_lines(self, exprs: Expressions) -> list:
        """Compute the reduced operand at the current indices and fold it into acc."""
        lines = exprs.emit(g.walk(self.operand))
        value = exprs.name(self.operand) if self.operand.kind != g.CONST else \
            literal(self.operand.value, self.operand.dtype)
        value = value if self.operand.dtype == self.acc else f"{self.acc.name}({value})"
        lines.append(f"acc = {self.combine('acc', value)}")
        return lines

    def result_lines(self, acc: str, params: Params, target: str) -> list:
        """From the accumulated value to `target = <root's value>` (post-reduction ufuncs)."""
        finished = f"{acc} / float64(red_size)" if self.reduction.op == "mean" else acc
        post = Expressions(params, len(self.node.shape), prefix="w")
        post.names[id(self.node)] = "res"
        lines = [f"res = {self.node.dtype.name}({finished})"]
        lines += post.emit(g.walk(self.root, stop=self.node))
        lines.append(f"{target} = {self.root.dtype.name}({_store(post, self.root)})")
        return lines

    def tree_lines(self) -> list:
        """Shared-memory tree over the block's accumulators; sh[0] holds the block's value."""
        return [
            "sh[t] = acc",
            "cuda.syncthreads()",
            f"k = {BLOCK // 2}",
            "while k > 0:",
            "    if t < k:",
            f"        sh[t] = {self.combine('sh[t]', 'sh[t + k]')}",
            "    cuda.syncthreads()",
            "    k //= 2",
        ]


def reduce_thread_kernel(name: str, parts: ReductionParts, index_type: str) -> KernelSource:
    """One thread per output element walks the whole reduced extent (short extents)."""
    exprs = Expressions(Params(), len(parts.space))
    inner = unravel("r", parts.reduced_dims, parts.space, index_type)
    inner += parts.element_lines(exprs)
    outer = unravel("o", parts.kept_dims, parts.space, index_type)
    outer += [f"acc = {parts.identity()}", "for r in range(red_size):"] + indent(inner)
    outer += parts.result_lines("acc", exprs.params, "out[o]")
    body = ["for o in range(cuda.grid(1), n_out, cuda.gridsize(1)):"] + indent(outer)
    return _source(name, exprs.params, _REDUCE_EXTRA, body)


_REDUCE_EXTRA = ["shape", "n_out", "red_size", "parts"]


def reduce_block_kernel(name: str, parts: ReductionParts, index_type: str,
                        final: bool) -> KernelSource:
    """A block per (output element, part): its threads stride over the part's share of the
    reduced extent and meet in a shared-memory tree. With final=False each block writes its
    partial accumulator; finish_kernel combines them."""
    exprs = Expressions(Params(), len(parts.space))
    inner = unravel("r", parts.reduced_dims, parts.space, index_type)
    inner += parts.element_lines(exprs)
    task = ["o = task // parts",
            f"start = (task - o * parts) * {BLOCK} + t"]
    task += unravel("o", parts.kept_dims, parts.space, index_type)
    task += [f"acc = {parts.identity()}",
             f"for r in range(start, red_size, parts * {BLOCK}):"] + indent(inner)
    task += parts.tree_lines()
    write = parts.result_lines("sh[0]", exprs.params, "out[o]") if final else \
        ["out[task] = sh[0]"]
    task += ["if t == 0:"] + indent(write) + ["cuda.syncthreads()"]
    body = [f"sh = cuda.shared.array({BLOCK}, np.{parts.acc.name})",
            "t = cuda.threadIdx.x",
            "for task in range(cuda.blockIdx.x, n_out * parts, cuda.gridDim.x):"] + indent(task)
    return _source(name, exprs.params, _REDUCE_EXTRA, body)


def finish_kernel(name: str, parts: ReductionParts) -> KernelSource:
    """out[o] = the combination of partials[o * parts : (o + 1) * parts], then the ufuncs that
    follow the reduction."""
    params = Params()
    per_output = [f"acc = {parts.identity()}",
                  f"for p in range(t, parts, {BLOCK}):",
                  f"    acc = {parts.combine('acc', 'partials[o * parts + p]')}"]
    per_output += parts.tree_lines()
    per_output += ["if t == 0:"] + indent(parts.result_lines("sh[0]", params, "out[o]"))
    per_output += ["cuda.syncthreads()"]
    body = [f"sh = cuda.shared.array({BLOCK}, np.{parts.acc.name})",
            "t = cuda.threadIdx.x",
            "for o in range(cuda.blockIdx.x, n_out, cuda.gridDim.x):"] + indent(per_output)
    return _source(name, params, ["n_out", "red_size", "parts"], body,
                   leading=("out", "partials"))


__all__ = ["KernelSource", "ReductionParts", "finish_kernel", "map_kernel",
           "reduce_block_kernel", "reduce_thread_kernel"]
