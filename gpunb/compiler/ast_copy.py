"""A deep copy of a Python AST, made for literal_unroll's body copies.

Why not copy.deepcopy: it goes through the memo, `__reduce_ex__` and `_reconstruct` for every
node and every list, which made the literal_unroll copies of a Hopper GEMM's epilogue (three
nested unrolls) a third of its typing time. An AST is a tree of nodes whose attributes are
nodes, lists of nodes or immutable constants (names, numbers, strings, the shared Load/Store
context singletons), so a walk over each node's `__dict__` copies it exactly: the fields, the
source positions (lineno, col_offset... that errors point at) and any other attribute a pass
kept on the node, with nothing shared between the copies but the immutable leaves.
"""

from __future__ import annotations

import ast


def copy_tree(node):
    """A copy of `node` (an AST node, a list of nodes, or an immutable leaf, returned as is)."""
    if isinstance(node, list):
        return [copy_tree(item) for item in node]
    if not isinstance(node, ast.AST) or isinstance(node, ast.expr_context):
        return node  # constants, identifiers, None; Load/Store/Del are stateless singletons
    made = node.__class__.__new__(node.__class__)
    made.__dict__.update({name: copy_tree(value) for name, value in node.__dict__.items()})
    return made
