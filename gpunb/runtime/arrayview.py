"""Array geometry shared by the device array classes: flags, views by basic indexing, reshapes.

Views are computed with numpy itself on a *fake* array (as_strided over one element) so indexing
rules (negative steps, Ellipsis, newaxis) are exactly numpy's; the fake's memory is never read, and
only basic indexing is allowed, because advanced indexing would make numpy copy the fake.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib.stride_tricks import as_strided


def contiguity(shape: tuple, strides: tuple, itemsize: int) -> tuple:
    """(c_contiguous, f_contiguous) by numpy's rules (extent-1 dimensions are ignored)."""
    # plain index loops: every device array (a tensor's view at each operator call, a slice)
    # is made through here, and generators over zip/reversed cost several times as much
    if 0 in shape:
        return True, True
    ndim = len(shape)
    c = True
    expected = itemsize
    for k in range(ndim - 1, -1, -1):
        n = shape[k]
        if n != 1:
            if strides[k] != expected:
                c = False
                break
            expected *= n
    f = True
    expected = itemsize
    for k in range(ndim):
        n = shape[k]
        if n != 1:
            if strides[k] != expected:
                f = False
                break
            expected *= n
    return c, f


def layout_of(ndim: int, c_contiguous: bool, f_contiguous: bool) -> str:
    """The kernel-language layout: 'C', 'F' (only for ndim > 1) or 'A'."""
    if c_contiguous:
        return "C"
    if f_contiguous and ndim > 1:
        return "F"
    return "A"


def c_strides(shape: tuple, itemsize: int) -> tuple:
    out = []
    step = itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def f_strides(shape: tuple, itemsize: int) -> tuple:
    out = []
    step = itemsize
    for n in shape:
        out.append(step)
        step *= max(n, 1)
    return tuple(out)


def normalize_shape(shape, unknown_ok: bool = False) -> tuple:
    """A shape as a tuple of ints: TypeError for a size that is not an integer (3.0, '3'),
    ValueError for a negative one; `unknown_ok` (a reshape's new shape) lets -1 through."""
    if isinstance(shape, (int, np.integer)):
        items = (shape,)
    else:
        try:
            items = tuple(shape)
        except TypeError:
            raise TypeError(f"shape must be an integer or tuple of integers, got "
                            f"{shape!r}") from None
    try:
        out = tuple(operator.index(n) for n in items)
    except TypeError:
        raise TypeError(f"shape must be an integer or tuple of integers, got {shape!r}") from None
    if any(n < (-1 if unknown_ok else 0) for n in out):
        raise ValueError(f"negative dimensions are not allowed, got {out}")
    return out


def check_order(order: str) -> None:
    """numba's check of an allocation's order (its message, too)."""
    if order not in ("C", "F"):
        raise ValueError(f"must be either C/F order, got order={order!r}")


def check_dtype(dtype: np.dtype, what: str) -> None:
    """Device memory holds numbers, records and fixed-width strings: an object dtype (what
    np.asarray makes of None, of mixed or ragged lists) would copy Python object pointers,
    which mean nothing to a kernel (numba would allocate it, and fail at the launch)."""
    if dtype.hasobject:
        raise TypeError(f"{what}: an array of Python objects (dtype {dtype}) cannot be put in "
                        f"device memory; pass numbers - e.g. np.asarray(values, "
                        f"dtype=np.float32) - not None or a list of mixed or ragged items")


def normalize_index(index) -> tuple:
    """Basic indices only (ints, slices, Ellipsis, None); anything else raises IndexError."""
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, slice):
            out.append(item)
        elif isinstance(item, (bool, np.bool_)) or isinstance(item, (list, np.ndarray)):
            raise IndexError(
                f"device arrays support basic indexing only (integers, slices, ..., None), not "
                f"{type(item).__name__}; copy to the host first (ary.copy_to_host()[index])")
        else:
            try:
                out.append(operator.index(item))
            except TypeError:
                raise IndexError(f"cannot index a device array with {item!r}") from None
    return tuple(out)


def view_of(shape: tuple, strides: tuple, dtype: np.dtype, index) -> tuple:
    """(shape, strides, byte offset, is_element) of `array[index]` for basic indexing.

    `is_element` is True when every dimension got an integer: the result is one element (the
    returned shape is then ())."""
    index = normalize_index(index)
    base = np.zeros(1, dtype=dtype)
    fake = as_strided(base, shape=shape, strides=strides)
    start = _address(fake)
    sub = fake[index]
    is_element = not isinstance(sub, np.ndarray)
    if is_element:
        sub = fake[index + (Ellipsis,)]
    return sub.shape, sub.strides, _address(sub) - start, is_element


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def reshaped(shape: tuple, strides: tuple, itemsize: int, newshape, order: str) -> tuple:
    """(shape, strides) of a reshape that keeps the data in place; ValueError if it cannot."""
    newshape = list(normalize_shape(newshape, unknown_ok=True))
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    unknown = [i for i, n in enumerate(newshape) if n == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if unknown:
        known = int(np.prod([n for n in newshape if n != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
        newshape[unknown[0]] = size // known
    newshape = tuple(newshape)
    newsize = int(np.prod(newshape, dtype=np.int64)) if newshape else 1
    if newsize != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {newshape}")
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', not {order!r}")
    c, f = contiguity(shape, strides, itemsize)
    if (order == "C" and not c) or (order == "F" and not f):
        raise NotImplementedError(
            f"reshape(order={order!r}) needs a {order}-contiguous device array; this one has "
            f"strides {strides}: copy it to a contiguous array first")
    new_strides = c_strides(newshape, itemsize) if order == "C" else f_strides(newshape, itemsize)
    return newshape, new_strides


def span(shape: tuple, strides: tuple, itemsize: int) -> tuple:
    """(low, high) byte offsets, relative to element 0, of the memory a view touches."""
    if 0 in shape:
        return 0, 0
    low, high = 0, itemsize
    for k in range(len(shape)):
        reach = strides[k] * (shape[k] - 1)
        if reach < 0:
            low += reach
        else:
            high += reach
    return low, high


def transposed(shape: tuple, strides: tuple, axes=None) -> tuple:
    ndim = len(shape)
    if len(axes or ()) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]  # a.transpose(None), a.transpose((1, 0)): np.transpose calls these
    if axes is None or axes == ():
        axes = tuple(reversed(range(ndim)))
    given = tuple(operator.index(a) for a in axes)
    normal = tuple(a % ndim if ndim and -ndim <= a < ndim else a for a in given)
    if sorted(normal) != list(range(ndim)):
        raise ValueError(f"invalid axes list {given}")  # numba-cuda's words
    return tuple(shape[a] for a in normal), tuple(strides[a] for a in normal)
