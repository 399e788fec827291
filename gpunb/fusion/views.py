"""Views of gpunb.fuse's array arguments: how basic indexing, new axes and transposes of an
argument are recorded on its graph leaf (graph.ArrayView) while tracing, and replayed on the real
array (or a fake one, for shapes) when the fused kernel is called."""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.lib.stride_tricks import as_strided

from gpunb.fusion import graph as g


def expand_ellipsis(key: tuple, ndim: int) -> tuple:
    consumed = sum(1 for item in key if item is not None and item is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{consumed} were indexed")
    if sum(1 for item in key if item is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    out = []
    for item in key:
        if item is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(item)
    if Ellipsis not in key:
        out.extend([slice(None)] * (ndim - consumed))
    return tuple(out)


def apply_view(array, view: tuple):
    """One recorded view operation on a numpy or device array (or a fake one, for shapes)."""
    kind, detail = view
    if kind == "index":
        return array[tuple(slice(*item[1:]) if isinstance(item, tuple) else item
                           for item in detail)]
    order = [m for m in detail if m is not None]
    if order != list(range(array.ndim)):
        array = array.transpose(order)
    return array[tuple(slice(None) if m is not None else None for m in detail)]


def array_view(node: g.Node, view: tuple) -> g.Node:
    """An ARRAY node read through one more view operation (new axes and transposes folded into
    dims so far are taken first, as a real view)."""
    leaf = node.value
    views = leaf.views
    fake = as_strided(np.zeros(1, node.dtype), leaf.source_shape, (0,) * len(leaf.source_shape))
    if leaf.dims != tuple(range(len(leaf.source_shape))):
        views += (("axes", leaf.dims),)
        fake = apply_view(fake, ("axes", leaf.dims))
    shape = tuple(apply_view(fake, view).shape)  # numpy's own rules and errors for the key
    leaf = g.ArrayView(leaf.index, views + (view,), shape, tuple(range(len(shape))))
    return dataclasses.replace(node, shape=shape, value=leaf)


def fold_axes(node: g.Node, mapping: tuple) -> g.Node:
    leaf = node.value
    dims = tuple(None if m is None else leaf.dims[m] for m in mapping)
    shape = tuple(1 if m is None else node.shape[m] for m in mapping)
    return dataclasses.replace(node, shape=shape, value=dataclasses.replace(leaf, dims=dims))


__all__ = ["apply_view", "array_view", "expand_ellipsis", "fold_axes"]
