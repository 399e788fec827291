"""A deep copy of a Python AST, made for literal_unroll's body copies.

Why not copy.deepcopy: it goes through `__reduce_ex__` and `_reconstruct` for every node and
every list, which made the literal_unroll copies of a Hopper GEMM's epilogue (three nested
unrolls) a third of its typing time. An AST is a graph of nodes whose attributes are nodes,
lists of nodes or immutable constants (names, numbers, strings, the shared Load/Store context
singletons), so a walk over each node's `__dict__` copies it exactly: the fields, the source
positions (lineno, col_offset... that errors point at) and any other attribute a pass kept on
the node. As deepcopy does, a node reached twice is copied once (a memo by identity): an
attribute a pass left pointing back into the tree (a cycle) does not recurse forever, and
nodes shared in the original are shared in the copy.
"""

from __future__ import annotations

import ast


def copy_tree(node, memo: dict | None = None):
    """A copy of `node` (an AST node, a list of nodes, or an immutable leaf, returned as is)."""
    memo = {} if memo is None else memo
    if isinstance(node, list):
        return [_copy_node(item, memo) if isinstance(item, _AST) else copy_tree(item, memo)
                for item in node]
    if not isinstance(node, _AST):
        return node  # constants, identifiers, None
    return _copy_node(node, memo)


_AST = ast.AST
_CONTEXT = ast.expr_context


def _copy_node(node: ast.AST, memo: dict) -> ast.AST:
    if isinstance(node, _CONTEXT):
        return node  # Load/Store/Del are stateless singletons
    made = memo.get(id(node))
    if made is not None:
        return made
    made = memo[id(node)] = node.__class__.__new__(node.__class__)
    fields = made.__dict__
    for name, value in node.__dict__.items():
        # leaves (positions, names, constants) inline: most of a tree's values are leaves
        if isinstance(value, _AST):
            value = _copy_node(value, memo)
        elif isinstance(value, list):
            value = [_copy_node(item, memo) if isinstance(item, _AST) else copy_tree(item, memo)
                     for item in value]
        fields[name] = value
    return made
