"""A failed launch is noted for %gpucache status, the panel and %gpudebug (jit/failures.py);
noting it must never replace the launch's own error. An argument whose attribute reads raise (a
torch tensor subclass whose __torch_function__ refuses everything) made the note raise that
exception instead of the LaunchError naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import LaunchError

torch = pytest.importorskip("torch")


class Refusing(torch.Tensor):
    """A tensor subclass that refuses every torch function, attribute reads included."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"{cls.__name__} refuses {getattr(func, '__name__', func)}")


@cuda.jit
def _copy(out, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i]


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def test_an_argument_whose_attributes_raise_leaves_the_launch_error():
    refusing = torch.ones(8).as_subclass(Refusing)
    for _ in range(2):
        with pytest.raises(LaunchError, match=r"argument 2 \('a'\).*Refusing refuses"):
            _copy[1, 8](np.zeros(8, np.float32), refusing)
    assert _copy.failed_launch is not None and "LaunchError" in _copy.failed_launch.describe()
