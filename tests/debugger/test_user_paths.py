"""The debugger as a user meets it: a breakpoint line without code, a cache hit from the same
kernel laid out differently, a condition that never holds, a launch abandoned mid-way, the
debug and plain variants side by side in the cache, and the watchdog (time held stopped at a
breakpoint does not count; a runaway debug launch still ends)."""

from __future__ import annotations

import importlib
import sys
import time

import numpy as np
import pytest
from debug_kernels import fill_index, line_of, spin_until_told

import gpunb
from gpunb import DebuggerError, DebugQuit, cuda
from gpunb.backends.cpu.executor import KernelIndexError, LoadedCpuKernel
from gpunb.debugger.session import Finished, Stop, open_sessions
from gpunb.foundation import config
from gpunb.foundation.errors import LaunchTimeoutError


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    for session in open_sessions():
        session.abort("test ended")
    gpunb.set_target(None)


LAID_OUT = {
    "tight": "def shift(out, x):\n    i = cuda.grid(1)\n    out[i] = x[i + 1]\n",
    # the same code (the same cache key): a comment and blank lines between the statements
    "airy": "def shift(out, x):\n    i = cuda.grid(1)\n\n    # one past the end for the last\n"
            "\n    out[i] = x[i + 1]\n",
}


def _module(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text("from gpunb import cuda\n\n\n@cuda.jit\n" + body)
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name).shift, path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def test_a_kernel_laid_out_anew_stops_and_fails_at_its_own_lines(tmp_path):
    tight, _ = _module(tmp_path, "dbg_tight", LAID_OUT["tight"])
    airy, airy_path = _module(tmp_path, "dbg_airy", LAID_OUT["airy"])
    x = np.arange(9, dtype=np.float32)
    for kernel in (tight, airy):  # the second is a cache hit of the first's entries
        with pytest.raises(KernelIndexError):
            kernel[1, 9](np.zeros(9, np.float32), x)
        s = gpunb.debug(kernel[1, 9], np.zeros(9, np.float32), x,
                        breaks=[line_of(kernel, "out[i] =")], thread=4)
        assert s.view().focus_state().line == line_of(kernel, "out[i] =")
        s.abort()
    with pytest.raises(KernelIndexError) as info:
        airy[1, 9](np.zeros(9, np.float32), x)
    assert info.value.loc.line == line_of(airy, "out[i] =")
    assert airy_path.read_text().splitlines()[info.value.loc.line - 1].strip() == \
        "out[i] = x[i + 1]"


def test_a_break_line_without_code_says_why_with_a_caret(tmp_path):
    kernel, _ = _module(tmp_path, "dbg_lines", LAID_OUT["airy"])
    args = (kernel[1, 4], np.zeros(4, np.float32), np.arange(5, dtype=np.float32))
    code = line_of(kernel, "out[i] =")
    first = line_of(kernel, "i = cuda.grid")
    cases = {code - 1: "is empty", code - 2: "is a comment",
             line_of(kernel, "def shift"): "has no statement of kernel 'shift'",
             code + 40: "is past its end (it has 10 lines)"}
    for line, why in cases.items():
        with pytest.raises(DebuggerError) as info:
            gpunb.debug(*args, breaks=[line])
        error = info.value
        assert f"line {line} of " in error.message and why in error.message, error.message
        assert f"lines with code: {first}, {code}" in error.hint
        if line < code:
            assert f"(the next after line {line}: {first if line < first else code})" \
                in error.hint
        assert not open_sessions()  # nothing was left waiting
    with pytest.raises(DebuggerError) as info:
        gpunb.debug(*args, breaks=[code - 2])
    assert info.value.loc.line == code - 2  # the caret stands under the comment
    assert "    # one past the end for the last\n    ^~~" in str(info.value)


@cuda.jit
def never_stops(out):
    i = cuda.grid(1)
    if i == out.size + 1_000_000:  # no thread has that index
        breakpoint()
    if i < out.size:
        out[i] = i * 3


def test_a_breakpoint_whose_condition_never_holds_runs_the_launch_to_its_end():
    out = np.zeros(40_000, np.int64)
    never_stops[(40_000 + 255) // 256, 256](out)  # a plain launch: the terminal never prompts
    np.testing.assert_array_equal(out, np.arange(40_000) * 3)
    assert not open_sessions()


def test_quitting_mid_launch_leaves_the_next_launches_working():
    out = np.zeros(2048, np.int64)
    s = gpunb.debug(fill_index[8, 256], out, breaks=[line_of(fill_index, "out[i] = i")],
                    block=(3,))
    assert s.stop.block == (3, 0, 0)
    assert s.abort("quit") and s.state == "aborted"
    with pytest.raises(DebugQuit, match="abandoned"):
        s.result()
    fill_index[8, 256](out)  # the plain kernel, then the debugger again
    np.testing.assert_array_equal(out, np.arange(2048))
    out[:] = 0
    again = gpunb.debug(fill_index[8, 256], out)
    assert isinstance(again.wait(), Finished) and again.error is None
    np.testing.assert_array_equal(out, np.arange(2048))


def test_the_plain_and_debug_variants_keep_their_own_artifacts():
    @cuda.jit
    def doubled(out):
        i = cuda.grid(1)
        out[i] = 2 * i

    out = np.zeros(256, np.int64)
    doubled[2, 128](out)
    s = gpunb.debug(doubled[2, 128], out, breaks=[line_of(doubled, "out[i] =")])
    assert s.state == "stopped"
    s.run_to_end()
    for _ in range(3):  # the plain kernel after a debug launch: its own code, native launch
        doubled[2, 128](out)
    plain = next(iter(doubled.specializations.values()))
    twin = next(iter(doubled._gpunb_debug_twin.specializations.values()))
    assert plain.artifact.debug_area == 0 and twin.artifact.debug_area > 0
    assert type(plain.program.loaded) is LoadedCpuKernel
    assert plain.program.native_launch((2, 1, 1), (128, 1, 1), 0, 0) is not None
    assert twin.program.native_launch((2, 1, 1), (128, 1, 1), 0, 0) is None
    assert doubled[2, 128]._native is not None
    # a fresh kernel of the same code: each variant comes back from the cache as itself
    again = cuda.jit(doubled.py_func)
    again[2, 128](out)
    s = gpunb.debug(again[2, 128], out, breaks=[line_of(doubled, "out[i] =")], thread=5)
    assert s.stop.thread == (5, 0, 0)
    s.run_to_end()
    assert next(iter(again.specializations.values())).artifact.debug_area == 0
    np.testing.assert_array_equal(out, 2 * np.arange(256))


def test_time_stopped_at_a_breakpoint_does_not_count_against_the_watchdog():
    out = np.zeros(64, np.int64)
    with config.launch_timeout_for(0.3):
        s = gpunb.debug(fill_index[2, 32], out, breaks=[line_of(fill_index, "out[i] = i")],
                        thread=7, block=1)
        assert isinstance(s.stop, Stop)
        time.sleep(1.0)  # the user looks: three times the limit
        event = s.continue_(10)
    assert isinstance(event, Finished) and event.error is None, event
    np.testing.assert_array_equal(out, np.arange(64))


def test_a_runaway_debug_launch_still_meets_the_watchdog_and_names_its_line():
    flags = np.zeros(2, np.int64)
    with config.launch_timeout_for(0.3):
        s = gpunb.debug(spin_until_told[1, 1], flags, timeout=5)
    assert isinstance(s.wait(5), Finished)
    assert isinstance(s.error, LaunchTimeoutError), s.error
    assert "ran longer than 0.3 s" in str(s.error)
    lines = (line_of(spin_until_told, "while flags"), line_of(spin_until_told, "count += 1"))
    assert any(f"was at line {n})" in str(s.error) for n in lines), str(s.error)
    fill_index[1, 8](np.zeros(8, np.int64))  # the next launch works


REC = np.dtype([("x", np.float32), ("n", np.int32)])


@cuda.jit
def record_and_flag(out, recs, scale, flag):
    i = cuda.grid(1)
    if flag:
        out[i] = recs[i].x * scale  # STOP


def test_argument_arrays_are_named_beside_record_and_bool_parameters():
    # a record array or a bool parameter made the signature text unreadable to the debugger:
    # every argument array was then labelled "the thread's local memory"
    recs = np.zeros(4, REC)
    recs["x"] = np.arange(4)
    out = np.zeros(4)
    session = gpunb.debug(record_and_flag[1, 4], out, recs, 2.0, True,
                          breaks=[line_of(record_and_flag, "# STOP")], thread=(2, 0, 0))
    values = {v.name: v.value for v in session.view().variables()}
    assert "argument 'recs'" in repr(values["recs"])
    assert "argument 'out'" in repr(values["out"])
    assert values["recs"].numpy()["x"].tolist() == [0, 1, 2, 3]
    session.run_to_end()
    session.result()
    assert out.tolist() == [0, 2, 4, 6]


@cuda.jit
def record_fields(out, recs):
    i = cuda.grid(1)
    r = recs[i]
    pair = (r, i)
    out[i] = r.x + pair[1]  # STOP


def test_p_reads_record_fields_as_the_kernel_writes_them():
    # `p r.x` was "AttributeError: 'RecordValue' object has no attribute 'x'"
    recs = np.zeros(4, REC)
    recs["x"], recs["n"] = np.arange(4), 7
    session = gpunb.debug(record_fields[1, 4], np.zeros(4), recs,
                          breaks=[line_of(record_fields, "# STOP")], thread=(2, 0, 0))
    view = session.view()
    assert view.evaluate("r.x") == 2.0 and view.evaluate("r['n']") == 7
    assert view.evaluate("recs[3].x") == 3.0
    assert view.evaluate("recs.x[1:3]").tolist() == [1.0, 2.0]
    assert view.evaluate("pair[0].n + pair[1]") == 9
    with pytest.raises(ValueError, match="read-only"):
        view.evaluate("recs.x.__setitem__(0, 5)")
    session.run_to_end()
