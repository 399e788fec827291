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
        return [_copy_node(item) if isinstance(item, _AST) else copy_tree(item) for item in node]
    if not isinstance(node, _AST):
        return node  # constants, identifiers, None
    return _copy_node(node)


_AST = ast.AST
_CONTEXT = ast.expr_context


def _copy_node(node: ast.AST) -> ast.AST:
    if isinstance(node, _CONTEXT):
        return node  # Load/Store/Del are stateless singletons
    made = node.__class__.__new__(node.__class__)
    fields = made.__dict__
    for name, value in node.__dict__.items():
        # leaves (positions, names, constants) inline: most of a tree's values are leaves
        if isinstance(value, _AST):
            value = _copy_node(value)
        elif isinstance(value, list):
            value = [_copy_node(item) if isinstance(item, _AST) else copy_tree(item)
                     for item in value]
        fields[name] = value
    return made
