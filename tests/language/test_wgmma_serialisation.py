"""The warning for wgmma kernels that ptxas serialises (backends/cuda/wgmma_lint.py): a kernel
using wgmma that also makes a subroutine call in SASS (a 64-bit integer division, an IEEE float
division or square root) gets a PerformanceWarning at that line when its PTX is made; the
driver's JIT, which links it, says nothing. nvJitLink's ptxas, where present, confirms each
verdict."""

from __future__ import annotations

import math
import re
import warnings

import pytest

from gpunb import cuda, float16, float32, int64, uint32
from gpunb.backends.cuda.linker import link_offline
from gpunb.backends.cuda.wgmma_lint import serialising_sites
from gpunb.cuda import PerformanceWarning
from gpunb.foundation.errors import ToolchainError


def _kernel(tail):
    def k(out, n, m, x, y):
        smem = cuda.shared.array(4096, float16, alignment=1024)
        acc = cuda.local.array(64, float32)
        d = cuda.wgmma.descriptor(smem[0:], 128)
        for i in range(n):
            cuda.wgmma.fence()
            cuda.wgmma.mma_async(acc, d, d, (64, 128, 16), float16, scale_d=i > 0)
            cuda.wgmma.commit_group()
            cuda.wgmma.wait_group(1)
        cuda.wgmma.wait_group(0)
        out[0] = acc[0] + tail(n, m, x, y)

    return k


@cuda.jit(device=True, forceinline=True)
def int64_division(n, m, x, y):
    return float32(n // m)  # line flagged: DIVISION_LINE


@cuda.jit(device=True, forceinline=True)
def uint32_division(n, m, x, y):
    return float32(uint32(n) // uint32(m))


@cuda.jit(device=True, forceinline=True)
def ieee_sqrt(n, m, x, y):
    return math.sqrt(x)


@cuda.jit(device=True, forceinline=True)
def fast_division(n, m, x, y):
    return cuda.libdevice.fast_fdividef(x, y)


SIG = (float32[:], int64, int64, float32, float32)
DIVISION_LINE = next(i for i, text in enumerate(open(__file__), 1)
                     if text.rstrip().endswith("# line flagged: DIVISION_LINE"))


def _compile(tail, cc=(9, 0, "a")) -> tuple:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ptx, _ = cuda.compile_ptx(_kernel(tail), SIG, cc=cc, launch_bounds=(128, 1))
    return ptx, [w for w in caught if issubclass(w.category, PerformanceWarning)]


def _nvjitlink_serialises(ptx: str) -> bool | None:
    try:
        _, log = link_offline(ptx, [], (9, 0), verbose=True)
    except ToolchainError:  # no nvJitLink here: the lint's verdict stands alone
        return None
    return "serialized" in log


def test_a_64_bit_division_is_flagged_at_its_line():
    ptx, caught = _compile(int64_division)
    assert len(caught) == 1
    w = caught[0]
    assert (w.filename, w.lineno) == (__file__, DIVISION_LINE)
    assert re.search(r"'k' uses wgmma and this line divides 64-bit integers.*uint32\(a\) // "
                     r"uint32\(b\)", str(w.message))
    assert _nvjitlink_serialises(ptx) in (True, None)


@pytest.mark.parametrize("tail", [uint32_division, fast_division])
def test_32_bit_and_approximate_divisions_are_not(tail):
    ptx, caught = _compile(tail)
    assert caught == []
    assert _nvjitlink_serialises(ptx) in (False, None)


def test_an_ieee_square_root_is_flagged():
    ptx, caught = _compile(ieee_sqrt)
    assert [str(w.message).split(" which")[0] for w in caught] == \
        ["'k' uses wgmma and this line takes an IEEE square root,"]
    assert _nvjitlink_serialises(ptx) in (True, None)


def test_kernels_without_wgmma_divide_as_they_like():
    def plain(out, n, m, x, y):
        out[0] = float32(n // m) + math.sqrt(x)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cuda.compile_ptx(plain, SIG, cc=(9, 0))
    assert not [w for w in caught if issubclass(w.category, PerformanceWarning)]


def test_sites_follow_the_loc_directives_and_skip_predicates():
    ptx = "\n".join([
        '.file 1 "/a.py"', '.file 2 "/b.py"', "wgmma.mma_async.sync.aligned ...",
        ".loc 1 7 3", "div.s64 %rd1, %rd2, %rd3;", "div.u32 %r1, %r2, %r3;",
        ".loc 2 9 1", "@!%p3 rem.u64 %rd4, %rd5, %rd6;", "div.rn.f32 %f1, %f2, %f3;",
        "div.approx.f32 %f1, %f2, %f3;", "call.uni (retval0), helper, (param0);",
        "rem.s64 %rd7, %rd8, %rd9;"])
    assert serialising_sites(ptx) == [("/a.py", 7, "int"), ("/b.py", 9, "int"),
                                      ("/b.py", 9, "div"), ("/b.py", 9, "call")]
