"""The corpus's reasons why compute-sanitizer cannot see some bugs on a GPU, checked against the
code gpunb and ptxas make of those kernels (PTX here; SASS with ptxas -arch=sm_90 and nvdisasm
where the nvidia-cuda-nvcc and -nvdisasm wheels are installed). No GPU needed."""

from __future__ import annotations

import subprocess

import pytest

from gpunb import cuda
from gpunb.runtime.typeof import typeof
from tests.correctness import corpus
from tests.correctness.run_case import HEADER


def _full_ptx(name: str, tmp_path) -> str:
    case = next(c for c in corpus.CASES if c.name == name)
    path = tmp_path / f"{name}_buggy.py"
    path.write_text(HEADER + case.source)
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - our corpus
    argtypes = tuple(typeof(a) for a in corpus.make_args(case.args))
    return cuda.compile_ptx(namespace["kernel"], argtypes)[0]


def _ptx(name: str, tmp_path) -> str:
    """The kernel's body (after .entry)."""
    ptx = _full_ptx(name, tmp_path)
    return ptx[ptx.index(".entry"):]


def _sass(name: str, tmp_path) -> list:
    """The SASS instructions of the buggy kernel for sm_90, one string each."""
    from gpunb.backends.cuda.toolchain import find_tool

    ptxas, nvdisasm = find_tool("ptxas"), find_tool("nvdisasm")
    if ptxas is None or nvdisasm is None:
        pytest.skip("ptxas or nvdisasm not found (pip install nvidia-cuda-nvcc "
                    "nvidia-cuda-nvdisasm)")
    (tmp_path / "k.ptx").write_text(_full_ptx(name, tmp_path))
    subprocess.run([ptxas, "-arch=sm_90", str(tmp_path / "k.ptx"), "-o",
                    str(tmp_path / "k.cubin")], check=True, capture_output=True)
    text = subprocess.run([nvdisasm, str(tmp_path / "k.cubin")], check=True,
                          capture_output=True, text=True).stdout
    return [line.split("*/", 1)[1].strip().rstrip(" ;") for line in text.splitlines()
            if "/*0" in line and "*/" in line]


def test_every_gap_names_one_of_the_checked_reasons():
    reasons = {corpus.GLOBAL_RACE, corpus.LOCAL_IN_REGISTERS, corpus.TUPLE_IN_STACK,
               corpus.MASK_LANES_MISSING, corpus.SHFL_NO_WARPSYNC,
               corpus.PYTHON_EXCEPTION, corpus.RACE_AFTER_LAST_BARRIER}
    assert {c.no_gpu for c in corpus.CASES if c.no_gpu} == reasons


def test_the_local_array_overrun_leaves_no_local_memory_access(tmp_path):
    ptx = _ptx("local_array_overrun", tmp_path)
    assert "st.local" not in ptx and "ld.local" not in ptx and "local_depot" not in ptx


def test_the_tuple_index_reads_a_24_byte_local_array(tmp_path):
    ptx = _ptx("tuple_index_out_of_range", tmp_path)
    assert "__local_depot0[24]" in ptx and "ld.local" in ptx


def test_the_constant_mask_shuffle_has_no_warpsync(tmp_path):
    sass = _sass("shfl_mask_without_caller", tmp_path)
    assert any(line.startswith("SHFL.IDX") for line in sass), sass
    assert not any("WARPSYNC" in line for line in sass), sass


def test_the_half_warp_ballot_is_a_vote_without_a_mask_check(tmp_path):
    sass = _sass("ballot_full_mask_in_half_warp", tmp_path)
    assert any(line.startswith("VOTE") for line in sass), sass
    assert not any("WARPSYNC" in line and ".ALL" not in line for line in sass), sass


def test_the_full_mask_collectives_in_a_branch_sync_lanes_that_never_arrive(tmp_path):
    """WARPSYNC.ALL (or a bare VOTE) inside the branch that only some lanes take: the case
    synccheck does not detect."""
    sass = _sass("shfl_down_in_branch_then_barrier", tmp_path)
    branch = next(k for k, line in enumerate(sass) if line.startswith("@") and "BRA" in line)
    shuffle = next(k for k, line in enumerate(sass) if line.startswith("SHFL.DOWN"))
    assert branch < shuffle and sass[shuffle - 1] == "WARPSYNC.ALL", sass
    sass = _sass("syncwarp_full_mask_in_branch", tmp_path)
    assert "WARPSYNC.ALL" in sass and not any("WARPSYNC 0x" in line for line in sass), sass


def test_the_checked_barrier_cases_keep_a_predicated_barrier(tmp_path):
    """The counterpart: synccheck has a divergent BAR.SYNC to report in the barrier cases."""
    for name in ("barrier_in_divergent_branch", "barriers_in_both_branches"):
        sass = _sass(name, tmp_path)
        assert any(line.startswith("@") and "BAR.SYNC" in line for line in sass), (name, sass)


def test_the_final_read_race_is_in_the_sass_after_the_last_barrier(tmp_path):
    """The race racecheck did not report is really there: a shared store and a shared load of
    the same address after the block's last barrier, with no barrier between them."""
    sass = _sass("final_read_without_barrier", tmp_path)
    last_bar = max(i for i, line in enumerate(sass) if line.startswith("BAR.SYNC"))
    after = sass[last_bar + 1:]
    assert any(line.startswith("STS") for line in after), sass
    assert any(line.startswith("LDS") for line in after), sass
    assert not any(line.startswith("BAR") for line in after), sass
