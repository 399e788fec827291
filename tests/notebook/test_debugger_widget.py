"""The debugger's notebook views: HTML of a stopped launch, the widget driven by its buttons (in
process, as a frontend's clicks would), the trace viewer, and the %%gpukernel options."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.debugger.session import open_sessions
from gpunb.notebook import debug_display, debug_view
from gpunb.notebook.options import OptionError, parse_kernel_options


@cuda.jit
def shared_shift(out, a):
    tile = cuda.shared.array(64, np.float32)
    i = cuda.threadIdx.x
    tile[i] = a[i] * 2
    cuda.syncthreads()
    j = (i + 1) % cuda.blockDim.x
    out[i] = tile[j]


@cuda.jit
def saxpy_like(out, x, y):
    i = cuda.grid(1)
    t = x[i] * np.float32(2.5) + 1
    out[i] = t + y[i]


def line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    for session in open_sessions():
        session.abort("test ended")
    gpunb.set_target(None)


def _stopped_shift(thread: int = 4):
    out, a = np.zeros(64, np.float32), np.arange(64, dtype=np.float32)
    s = gpunb.debug(shared_shift[1, 64], out, a, breaks=[line_of(shared_shift, "j = (i + 1)")],
                    thread=thread)
    return s, out, a


def test_the_stopped_view_as_html():
    s, _, a = _stopped_shift()
    parts = debug_view.stopped_html(s, "i", "warp")
    line = line_of(shared_shift, "j = (i + 1)")
    assert "stopped at a breakpoint: thread (4, 0, 0)" in parts["head"]
    assert f'class="gl dbg-here" data-l="{line}"' in parts["source"]
    assert "<td>i</td><td>int32</td>" in parts["variables"]
    assert "<td>tile</td><td>float32[::1]</td>" in parts["variables"]
    assert parts["across"].count('data-lane="') == 32
    assert 'class="dbg-diverged" data-lane="0"' in parts["across"]  # ran ahead, exited
    assert 'class="dbg-focus" data-lane="4"' in parts["across"]
    assert "<b>tile</b>" in parts["shared"] and "<td>126</td>" in parts["shared"]  # 2 * 63
    assert parts["names"] == ["a", "i", "out", "tile"] and parts["chosen"] == "i"
    bundle = debug_display.session_bundle(s)
    assert "stopped at a breakpoint" in bundle["text/plain"]


def test_the_widget_follows_its_buttons():
    pytest.importorskip("ipywidgets")
    from gpunb.notebook.debug_widget import DebuggerWidget

    s, out, a = _stopped_shift()
    widget = DebuggerWidget(s)
    assert "gpunb-debugger" in widget._dom_classes
    assert "thread (4, 0, 0)" in widget.header.value
    assert not widget.buttons["next"].disabled and widget.pause.disabled
    widget.buttons["next"].click()
    assert "stopped at a step" in widget.header.value
    assert f"line {line_of(shared_shift, 'out[i] = tile[j]')}" in widget.header.value
    widget.thread.value = "70"
    widget.switch.click()
    assert "outside the launch" in widget.status.value
    widget.thread.value = "2"
    widget.switch.click()
    assert "focus: thread <b>(2, 0, 0)</b>" in widget.header.value and not widget.status.value
    widget.name.value = "j"
    assert "<td>3</td>" in widget.across.value  # j of thread 2 (exited)
    widget.scope.value = "block"
    assert widget.across.value.count('data-lane="') == 64
    widget.buttons["finish"].click()
    assert "finished" in widget.header.value and widget.quit.disabled
    assert all(b.disabled for b in widget.buttons.values())
    np.testing.assert_array_equal(out, np.roll(a * 2, -1))


def test_the_widget_says_when_a_new_launch_abandoned_its_session():
    pytest.importorskip("ipywidgets")
    from gpunb.notebook.debug_widget import DebuggerWidget

    s, _, _ = _stopped_shift()
    widget = DebuggerWidget(s)
    gpunb.debug(shared_shift[1, 64], np.zeros(64, np.float32), np.zeros(64, np.float32))
    assert s.state == "aborted"
    assert "abandoned" in widget.header.value and "new debug launch" in widget.header.value


def test_the_trace_viewer_scrubs_through_the_steps():
    pytest.importorskip("ipywidgets")
    from gpunb.notebook.trace_widget import TraceWidget

    out, x, y = np.zeros(4, np.float32), np.ones(4, np.float32), np.ones(4, np.float32)
    trace = gpunb.trace(saxpy_like[1, 4], out, x, y, threads="0-1")
    widget = TraceWidget(trace)
    assert "step <b>1</b> of" in widget.header.value
    widget.next.click()
    widget.next.click()
    assert "step <b>3</b> of" in widget.header.value
    widget.thread.value = 1
    assert widget.slider.max == len(trace.of_thread(1)) - 1
    widget.slider.value = widget.slider.max - 1
    assert "thread <b>(1, 0, 0)</b>" in widget.header.value
    assert "<td>t</td><td>float64</td>" in widget.variables.value


def test_gpukernel_debugger_options():
    options = parse_kernel_options("--break 5 --break 7 --thread 3,0,0 --block 1")
    assert options.breaks == (5, 7) and options.thread == "3,0,0" and options.block == "1"
    assert options.jit_options() == {"debugger": True, "target": "cpu"}
    traced = parse_kernel_options("--trace --threads 'warp 1'")
    assert traced.trace and traced.threads == "warp 1" and traced.debugger
    assert parse_kernel_options("--lineinfo").jit_options() == {"lineinfo": True}
    for line, message in (("--break 5 --target cuda", "drop --target cuda"),
                          ("--thread 3", "add --break LINE"),
                          ("--threads 0-3", "add --trace"),
                          ("--break 3 --trace", "use one of them"),
                          ("--break 0", "cell lines start at 1"),
                          ("--break 4 --thread x,y", "non-negative integers"),
                          ("--break four", "invalid int value")):
        with pytest.raises(OptionError, match=message):
            parse_kernel_options(line)


def test_break_cells_debug_their_kernels_decorated_or_not(shell):
    from gpunb.jit.debug_launch import request_for

    shell.run_cell("%%gpukernel --break 4 --thread 1\n@cuda.jit(fastmath=True)\ndef k(a):\n"
                   "    i = cuda.grid(1)\n    a[i] = i\n\ndef plain(a):\n    a[0] = 1\n\n"
                   "@cuda.jit(device=True)\ndef helper(x):\n    return x\n")
    k, plain, helper = (shell.user_ns[n] for n in ("k", "plain", "helper"))
    assert k.options == {"fastmath": True, "debugger": True} and k.requested_target == "cpu"
    assert plain.options == {"debugger": True} and plain.requested_target == "cpu"
    assert helper.device and "debugger" not in helper.options  # inlined into debug variants
    for kernel in (k, plain):
        request = request_for(kernel)
        assert request.breaks == ((None, 4),) and request.thread == "1"
