"""The debugger driven programmatically: stop, inspect, step, switch, continue, post-mortem.

Every value the debugger shows must be the compiled kernel's own: the tests compare them with
what the same launch computes without the debugger and with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from debug_kernels import (
    conditional_stop,
    fill_index,
    line_of,
    mixed_types,
    off_by_one,
    saxpy_like,
    scale,
    shared_shift,
)

import gpunb
from gpunb import DebuggerError, DebugQuit
from gpunb.backends.cpu.executor import KernelIndexError
from gpunb.debugger.session import Finished, Stop, open_sessions


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    for session in open_sessions():
        session.abort("test ended")
    gpunb.set_target(None)


def _vars(session) -> dict:
    return {v.name: v for v in session.view().variables()}


def _saxpy_inputs(n=40):
    x = np.linspace(0, 1, n, dtype=np.float32)
    y = np.arange(n, dtype=np.float32)
    return np.zeros(n, np.float32), x, y


def test_stops_at_a_line_in_the_chosen_thread_with_values_and_types():
    out, x, y = _saxpy_inputs()
    line = line_of(saxpy_like, "t = scale")
    s = gpunb.debug(saxpy_like[2, 32], out, x, y, breaks=[line], thread=(5,), block=(1,))
    assert isinstance(s.stop, Stop) and s.stop.reason == "breakpoint"
    assert (s.stop.block, s.stop.thread) == ((1, 0, 0), (5, 0, 0))
    assert s.view().focus_state().line == line
    v = _vars(s)
    assert (v["i"].type, int(v["i"].value)) == ("int64", 37)
    assert (v["a"].type, v["a"].value) == ("float32", np.float32(2.5))
    assert "t" not in v  # not defined yet: the line has not run
    assert v["x"].type == "float32[::1]" and v["x"].value.space == "global"
    np.testing.assert_array_equal(v["x"].value.numpy(), x)
    s.run_to_end()
    s.result()


def test_step_into_over_and_out_of_a_device_function():
    out, x, y = _saxpy_inputs()
    line = line_of(saxpy_like, "t = scale")
    s = gpunb.debug(saxpy_like[2, 32], out, x, y, breaks=[line], thread=3)
    event = s.step()
    assert event.reason == "step"
    stack = s.view().where()
    assert [f.function for f in stack] == ["saxpy_like", "scale"]
    assert stack[0].line == line and stack[1].line == line_of(scale, "scaled = value")
    v = _vars(s)
    assert float(v["value"].value) == pytest.approx(float(x[3])) and v["factor"].type == "float32"
    s.next()
    assert s.view().where()[-1].line == line_of(scale, "return scaled")
    assert float(_vars(s)["scaled"].value) == np.float32(x[3]) * np.float32(2.5)
    s.step_out()
    assert [f.function for f in s.view().where()] == ["saxpy_like"]
    assert s.view().focus_state().line == line_of(saxpy_like, "out[i] = t + y[i]")
    # numba's types: float32 * float32, then + 1 (an int64) makes a float64
    expected_t = np.float64(np.float32(x[3]) * np.float32(2.5)) + 1
    assert _vars(s)["t"].type == "float64" and _vars(s)["t"].value == expected_t
    s.next()  # over the last line: the thread ends
    assert s.stop.reason == "exit"
    assert out[3] == np.float32(expected_t + y[3])
    s.run_to_end()
    s.result()


def test_next_steps_over_the_device_function():
    out, x, y = _saxpy_inputs()
    line = line_of(saxpy_like, "t = scale")
    s = gpunb.debug(saxpy_like[2, 32], out, x, y, breaks=[line], thread=0)
    s.next()
    assert [f.function for f in s.view().where()] == ["saxpy_like"]
    assert s.view().focus_state().line == line_of(saxpy_like, "out[i] = t + y[i]")
    s.run_to_end()


def test_the_debugged_launch_computes_what_a_plain_launch_does():
    out, x, y = _saxpy_inputs(64)
    s = gpunb.debug(saxpy_like[2, 32], out, x, y, breaks=[line_of(saxpy_like, "t = scale")])
    while not s.finished:
        s.continue_()  # every thread stops once on its way
    s.result()
    plain = np.zeros_like(out)
    saxpy_like[2, 32](plain, x, y)
    np.testing.assert_array_equal(out, plain)
    np.testing.assert_allclose(out, (x * np.float32(2.5) + 1) + y, rtol=1e-6)


def test_each_definition_shows_its_own_numba_type():
    out = np.zeros(8, np.float64)
    line = line_of(mixed_types, "if i < out.size")
    s = gpunb.debug(mixed_types[1, 8], out, 3, breaks=[line], thread=2)
    v = _vars(s)
    assert (v["x"].type, float(v["x"].value)) == ("float64", 1.0)  # the joined definition
    assert v["pair"].type == "(int64, float32)" and v["pair"].value == (2, 1.5)
    assert (v["flag"].type, v["flag"].value) == ("bool", False)
    s.switch(thread=5)
    v = _vars(s)
    assert s.view().focus_state().status == "not started"
    assert v == {}
    s.run_to_end()
    s.result()
    plain = np.zeros_like(out)
    mixed_types[1, 8](plain, 3)
    np.testing.assert_array_equal(out, plain)


def test_warp_and_block_tables_mark_values_and_divergence():
    out, a = np.zeros(64, np.float32), np.arange(64, dtype=np.float32)
    s = gpunb.debug(shared_shift[1, 64], out, a, breaks=[line_of(shared_shift, "j = (i + 1)")],
                    thread=4)
    view = s.view()
    rows = view.across("i", view.warp())
    assert len(rows) == 32 and [int(r.value) for r in rows[:5]] == [0, 1, 2, 3, 4]
    focus = rows[4]
    assert not focus.differs and not focus.diverged
    assert rows[3].differs  # another value of i
    # threads 0-3 ran ahead: they are past the line (exited), 5-31 wait their turn on it
    assert all(r.diverged for r in rows[:4])
    block = view.across("i", view.block_threads())
    assert len(block) == 64


def test_shared_memory_shows_as_an_array_of_the_block():
    out, a = np.zeros(64, np.float32), np.arange(64, dtype=np.float32)
    s = gpunb.debug(shared_shift[1, 64], out, a, breaks=[line_of(shared_shift, "j = (i + 1)")],
                    thread=10)
    (name, tile), = s.view().shared_arrays()
    assert name == "tile" and tile.space == "shared"
    np.testing.assert_array_equal(tile.numpy(), a * 2)  # every thread stored before the barrier
    assert s.view().evaluate("tile[i + 1]") == np.float32(22)


def test_continue_to_barrier_and_who_waits_there():
    out, a = np.zeros(64, np.float32), np.arange(64, dtype=np.float32)
    s = gpunb.debug(shared_shift[1, 64], out, a, breaks=[line_of(shared_shift, "tile[i] =")],
                    thread=7)
    event = s.continue_to_barrier()
    assert event.reason == "barrier" and event.barrier[3] == "cuda.syncthreads"
    assert event.barrier[1] == line_of(shared_shift, "cuda.syncthreads()")
    waits = dict(((what, line), n) for what, line, n in s.view().barrier_waits())
    assert waits[("cuda.syncthreads", event.barrier[1])] == 7  # threads 0-6 arrived first
    assert waits[("not started", 0)] == 56
    s.next()  # over the barrier: every thread arrives, then thread 7 goes on
    assert s.view().focus_state().line == line_of(shared_shift, "j = (i + 1)")
    s.run_to_end()
    s.result()
    np.testing.assert_array_equal(out, np.roll(a * 2, -1))


def test_switch_thread_shows_its_state_without_running_anything():
    out, a = np.zeros(64, np.float32), np.arange(64, dtype=np.float32)
    s = gpunb.debug(shared_shift[1, 64], out, a, breaks=[line_of(shared_shift, "out[i] =")],
                    thread=20)
    s.switch(thread=(3, 0, 0))
    state = s.view().focus_state()
    assert state.thread == (3, 0, 0) and state.status == "exited"
    assert int(_vars(s)["j"].value) == 4
    s.switch(thread="40")
    assert s.view().focus_state().status == "suspended"  # released from the barrier
    event = s.step()  # runs until thread 40 reaches its next line
    assert event.thread == (40, 0, 0)
    with pytest.raises(DebuggerError, match=r"thread \(64, 0, 0\) is outside the launch"):
        s.switch(thread=64)
    with pytest.raises(DebuggerError, match="block"):
        s.switch(block=(1, 0, 0))
    s.run_to_end()


def test_conditional_breakpoint_stops_one_thread_of_many():
    out = np.zeros(100, np.int64)
    s = gpunb.debug(conditional_stop[4, 32], out)
    assert s.stop.reason == "breakpoint()" and s.stop.block == (1, 0, 0) and \
        s.stop.thread == (5, 0, 0)
    assert int(_vars(s)["total"].value) == 37 * 6
    event = s.continue_()
    assert isinstance(event, Finished) and event.error is None
    np.testing.assert_array_equal(out, np.arange(100) * 6)


def test_breakpoint_in_a_million_threads_stops_the_first_and_counts_the_others():
    out = np.zeros(1 << 20, np.int64)
    line = line_of(fill_index, "out[i] = i")
    s = gpunb.debug(fill_index[4096, 256], out, breaks=[line])
    assert (s.stop.block, s.stop.thread) == ((0, 0, 0), (0, 0, 0))
    headline = s.view().headline()
    assert "1,048,575 other threads of 1,048,576 wait" in headline
    assert "1,048,320 in blocks not started yet" in headline
    s.run_to_end()
    s.result()
    np.testing.assert_array_equal(out, np.arange(1 << 20))


def test_post_mortem_stops_at_the_failing_thread_and_line():
    out = np.zeros(64, np.int64)
    with pytest.raises(KernelIndexError):
        off_by_one[2, 32](out)
    s = gpunb.post_mortem()
    assert s.stop.reason == "error" and isinstance(s.stop.error, KernelIndexError)
    assert (s.stop.block, s.stop.thread) == ((1, 0, 0), (31, 0, 0))
    assert s.view().focus_state().line == line_of(off_by_one, "out[i + 1] = i")
    assert int(_vars(s)["i"].value) == 63
    assert "index 64 is out of bounds" in s.view().headline()
    event = s.continue_()
    assert isinstance(event, Finished) and isinstance(event.error, KernelIndexError)
    with pytest.raises(KernelIndexError):
        s.result()


def test_post_mortem_replays_a_launch_whose_array_was_made_in_its_own_line():
    # `off_by_one[2, 32](np.zeros(64, np.int64))`: the failed launch held its arrays weakly, so
    # the array was gone before %gpudebug ran, and launching again (the hint) changed nothing
    import gc

    with pytest.raises(KernelIndexError):
        off_by_one[2, 32](np.zeros(64, np.int64))
    gc.collect()
    s = gpunb.post_mortem()
    assert s.stop.reason == "error" and (s.stop.block, s.stop.thread) == ((1, 0, 0), (31, 0, 0))
    s.abort("test done")


def test_a_failed_launch_holds_only_small_arrays():
    import gc
    import weakref

    from gpunb.jit import failures

    big = np.zeros(failures.HELD_ARRAY_BYTES // 8 + 1, np.int64)
    ref = weakref.ref(big)
    with pytest.raises(KernelIndexError):
        off_by_one[1, 32](big[:32])  # a small view of a large array: held weakly (it would
    del big  # keep all of the array alive)
    gc.collect()
    assert ref() is None
    with pytest.raises(DebuggerError, match="one of its arrays is gone"):
        gpunb.post_mortem()


def test_post_mortem_of_a_runaway_launch_pauses_where_it_spins(monkeypatch):
    # the replay of a launch the watchdog ended ran without end once the limit was gone (a
    # script hung in gpunb.post_mortem()); it now runs a moment and stops where a thread spins
    import time

    from debug_kernels import spin_until_told

    from gpunb.foundation.errors import LaunchTimeoutError

    flags = np.zeros(2, np.int64)
    monkeypatch.setenv("GPUNB_LAUNCH_TIMEOUT", "0.5")
    with pytest.raises(LaunchTimeoutError):
        spin_until_told[1, 4](flags)
    monkeypatch.delenv("GPUNB_LAUNCH_TIMEOUT")
    started = time.monotonic()
    s = gpunb.post_mortem()
    assert time.monotonic() - started < 30
    assert s.state == "stopped" and s.stop.reason == "pause"
    line = s.view().focus_state().line
    assert line in (line_of(spin_until_told, "while flags[0] == 0"),
                    line_of(spin_until_told, "count += 1"))
    flags[0] = 1  # the spinning thread sees it: the launch ends
    event = s.run_to_end()
    assert isinstance(event, Finished) and event.error is None


def test_post_mortem_of_a_race_or_a_fault_says_how_to_stop_at_its_line():
    # it replayed them, no thread stopped, and the message blamed inputs changed since
    from gpunb import KernelFaultError, RaceError, cuda

    @cuda.jit(racecheck=True)
    def rotate(out):
        s = cuda.shared.array(32, np.float32)
        i = cuda.threadIdx.x
        s[i] = i
        out[i] = s[(i + 1) % 32]

    @cuda.jit(boundscheck=False)
    def far(out):
        if cuda.grid(1) == 5:
            out[10**9] = 1

    for kernel, error, line in ((rotate, RaceError, "out[i] = s[(i + 1) % 32]"),
                                (far, KernelFaultError, "out[10**9] = 1")):
        with pytest.raises(error):
            kernel[1, 32](np.zeros(32, np.float32))
        with pytest.raises(DebuggerError, match=f"cannot stop at the last failure "
                                                f"\\({error.__name__}: ") as info:
            gpunb.post_mortem()
        assert f"breaks=[{line_of(kernel, line)}]" in info.value.hint
        assert open_sessions() == []


def test_post_mortem_of_a_launch_refused_before_its_threads_ran_says_so():
    """It re-raised the launch's own error (a block of 2000 threads, a wrong argument count)
    without a location, as if %gpudebug itself had been launched wrong."""
    from gpunb import LaunchError

    out = np.zeros(8, np.int64)
    with pytest.raises(LaunchError, match="2000 threads"):
        fill_index[1, 2000](out)
    with pytest.raises(DebuggerError, match=r"fails before any of its threads run \(LaunchError: "
                                            r"a block of \(2000, 1, 1\)") as info:
        gpunb.post_mortem()
    assert "replays a launch that failed inside its kernel" in info.value.hint
    with pytest.raises(LaunchError, match="takes 1 argument"):
        fill_index[1, 8](out, 5)
    with pytest.raises(DebuggerError, match="fails before any of its threads run"):
        gpunb.post_mortem()


def test_errors_stop_a_debug_launch_too():
    out = np.zeros(8, np.int64)
    s = gpunb.debug(off_by_one[1, 8], out)
    assert s.stop.reason == "error" and s.stop.thread == (7, 0, 0)


def test_a_new_launch_abandons_an_open_session():
    out, x, y = _saxpy_inputs()
    first = gpunb.debug(saxpy_like[1, 32], out, x, y, breaks=[line_of(saxpy_like, "t = ")])
    assert first.state == "stopped"
    second = gpunb.debug(fill_index[1, 8], np.zeros(8, np.int64))
    assert first.state == "aborted" and "new debug launch" in first.ended_by
    with pytest.raises(DebugQuit, match="abandoned"):
        first.result()
    assert isinstance(second.wait(), Finished)
    with pytest.raises(DebuggerError, match="has ended"):
        first.step()


def test_pause_stops_a_running_launch_where_it_is():
    flags = np.zeros(2, np.int64)
    from debug_kernels import spin_until_told

    s = gpunb.debug(spin_until_told[1, 1], flags, timeout=0.2)
    assert s.state == "running"
    s.pause()
    event = s.wait(10)
    assert isinstance(event, Stop) and event.reason == "pause"
    assert s.view().focus_state().line in (line_of(spin_until_told, "while flags"),
                                           line_of(spin_until_told, "count += 1"))
    assert int(_vars(s)["count"].value) >= 0
    flags[0] = 1
    s.run_to_end()
    s.result()
    assert flags[1] > 0


def test_a_pause_asked_by_ctrl_c_is_named_an_interrupt():
    # the terminal's and the notebook's Ctrl-C ask for the pause; the stop names the interrupt,
    # as when the CPU target's own SIGINT handler reaches the running thread first
    flags = np.zeros(2, np.int64)
    from debug_kernels import spin_until_told

    s = gpunb.debug(spin_until_told[1, 1], flags, timeout=0.2)
    s.pause(interrupt=True)
    event = s.wait(10)
    assert isinstance(event, Stop) and event.reason == "interrupt"
    flags[0] = 1
    s.run_to_end()
    s.result()


def test_bad_requests_are_clear_errors():
    out = np.zeros(8, np.int64)
    with pytest.raises(DebuggerError, match=r"line 1 of .* has no statement.*") as info:
        gpunb.debug(fill_index[1, 8], out, breaks=[1])
    assert "lines with code" in info.value.hint
    with pytest.raises(DebuggerError, match=r"thread \(9, 0, 0\) is outside the launch"):
        gpunb.debug(fill_index[1, 8], out, breaks=[line_of(fill_index, "out[i] = i")],
                    thread=9)
    with pytest.raises(DebuggerError, match=r"block \(0, 2, 0\) is outside"):
        gpunb.debug(fill_index[1, 8], out, breaks=[line_of(fill_index, "out[i] = i")],
                    block=(0, 2))
    with pytest.raises(DebuggerError, match="configured launch"):
        gpunb.debug(fill_index, out)


def test_trace_records_each_line_of_the_chosen_threads():
    out, x, y = _saxpy_inputs(8)
    trace = gpunb.trace(saxpy_like[1, 8], out, x, y, threads="0-1")
    assert trace.threads() == [0, 1] and gpunb.last_trace() is trace
    lines = [s.line for s in trace.of_thread(1) if not s.exited]
    assert lines == [line_of(saxpy_like, "i = cuda"), line_of(saxpy_like, "a = np"),
                     line_of(saxpy_like, "if i < out"), line_of(saxpy_like, "t = scale"),
                     line_of(scale, "scaled ="), line_of(scale, "return scaled"),
                     line_of(saxpy_like, "out[i] =")]
    history = dict(trace.history("t", 1))
    assert history[line_of(saxpy_like, "out[i] =")] == \
        np.float64(np.float32(x[1]) * np.float32(2.5)) + 1
    assert trace.of_thread(1)[-1].exited


def test_trace_of_a_failing_launch_is_kept_on_the_error():
    out = np.zeros(8, np.int64)
    with pytest.raises(KernelIndexError) as info:
        gpunb.trace(off_by_one[1, 8], out, threads="warp 0")
    assert len(info.value.trace.of_thread(7)) >= 2


def test_breakpoint_in_a_device_function_shows_both_frames():
    from debug_kernels import clamp_all, clamp_and_stop

    out = np.zeros(8, np.int64)
    s = gpunb.debug(clamp_all[1, 8], out, 35)
    assert s.stop.reason == "breakpoint()" and s.stop.thread == (4, 0, 0)
    stack = s.view().where()
    assert [(f.function, f.line) for f in stack] == [
        ("clamp_all", line_of(clamp_all, "out[i] = clamp")),
        ("clamp_and_stop", line_of(clamp_and_stop, "breakpoint()"))]
    assert {v.name: int(v.value) for v in s.view().variables()} == {"v": 40, "hi": 35}
    s.frame_level = 0  # the caller's frame (pdb's `up`)
    assert "i" in {v.name for v in s.view().variables()}
    s.frame_level = None
    s.clear_breakpoints()  # threads 5-7 would stop there too
    s.continue_()
    s.result()
    np.testing.assert_array_equal(out, [0, 10, 20, 30, 35, 35, 35, 35])
