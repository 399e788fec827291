"""Array geometry (gpunb/runtime/arrayview.py) against numpy itself: contiguity flags and the
byte span a view touches, over views made by slicing with steps and transposing."""

from __future__ import annotations

import itertools
import random

import numpy as np

from gpunb.runtime import arrayview as av


def _views(count: int):
    rng = random.Random(7)
    for _ in range(count):
        ndim = rng.randint(0, 4)
        view = np.zeros(tuple(rng.choice([0, 1, 1, 2, 3, 5]) for _ in range(ndim)), np.float32)
        view = view[tuple(slice(None, None, rng.choice([1, 1, -1, 2])) for _ in range(ndim))]
        if ndim > 1 and rng.random() < 0.5:
            view = view.transpose(rng.sample(range(ndim), ndim))
        yield view


def test_contiguity_is_numpys():
    for view in _views(1500):
        assert av.contiguity(view.shape, view.strides, 4) == \
            (view.flags.c_contiguous, view.flags.f_contiguous), (view.shape, view.strides)


def test_span_covers_exactly_the_elements():
    for view in _views(1500):
        offsets = [sum(i * s for i, s in zip(index, view.strides, strict=True))
                   for index in itertools.product(*map(range, view.shape))]
        expected = (min(offsets), max(offsets) + 4) if view.size else (0, 0)
        assert av.span(view.shape, view.strides, 4) == expected, (view.shape, view.strides)


def test_layout_of_a_column_and_a_transpose():
    column = np.zeros((4, 3), np.float32)[:, 1]
    assert av.contiguity(column.shape, column.strides, 4) == (False, False)
    t = np.zeros((4, 3), np.float32).T
    c, f = av.contiguity(t.shape, t.strides, 4)
    assert av.layout_of(2, c, f) == "F" and av.layout_of(1, *av.contiguity((5,), (4,), 4)) == "C"
