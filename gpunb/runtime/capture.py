"""Which graph capture, if any, takes this thread's launches and copies, what it records, and
what a capture cannot hold.

A `with gpunb.graph():` block (gpunb/graphs) opens a Capture on its thread. The layers below the
graph API look here: a launch (jit/capture_launch.py) and a copy (runtime/captured_copies.py)
become records of the capture instead of running now, and what cannot be captured (a
synchronisation, an allocation, a host copy the graph could not repeat) raises GraphError
before it reaches the driver. The rules are the same on both targets, so a notebook that
captures on the CPU target captures on a GPU. Nothing here knows CUDA graphs: the Capture does.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

from gpunb.backends.cuda.launch import stream_handle
from gpunb.foundation.errors import GraphError, user_location

open_captures = 0  # captures open in this process: the launch path reads this int first
_tls = threading.local()  # .capture: this thread's open Capture
_lock = threading.Lock()


class CapturedLaunch:
    """One kernel launch of a graph: the specialisation, its configuration and a copy of its
    packed parameters (what the GPU reads at each replay), and the graph node it became."""

    __slots__ = ("index", "kernel", "spec", "grid", "block", "shared_bytes", "params", "node",
                 "shapes", "stream")

    def __init__(self, kernel, spec, grid: tuple, block: tuple, shared_bytes: int, params,
                 shapes: tuple):
        self.index = -1  # its position among the graph's launches, given by the graph
        self.kernel = kernel  # the Dispatcher
        self.spec = spec
        self.grid = grid
        self.block = block
        self.shared_bytes = shared_bytes
        self.params = params  # runtime/packed_params.PackedParams
        self.node = 0  # the CUDA graph node (0 on the CPU target)
        self.shapes = shapes  # each argument's shape (() for scalars)
        self.stream = 0  # the CUDA stream it is captured on

    @property
    def name(self) -> str:
        return self.kernel.__name__


class CapturedCopy:
    """One copy of a graph: its direction and size, the node it became (CUDA) or what repeats
    it (the CPU target)."""

    __slots__ = ("kind", "nbytes", "node", "replay")

    def __init__(self, kind: str, nbytes: int, replay=None):
        self.kind = kind  # "host to device", "device to host", "device to device"
        self.nbytes = nbytes
        self.node = 0
        self.replay = replay  # CPU target: () -> None, the copy again


if TYPE_CHECKING:  # (a Protocol class costs a module import milliseconds: types only)
    class Capture(Protocol):
        """What a graph capture offers the layers below it."""

        target: str  # "cuda" or "cpu": the target whose kernels it captures
        stream: int  # the CUDA stream it captures on (0 on the CPU target)
        capture_id: int  # the driver's id of the capture sequence (0 on the CPU target)

        def add_launch(self, launch: CapturedLaunch, args: tuple) -> None:
            """Take a launch (on CUDA: launch it on `stream`, where the driver captures it);
            `args` are its arguments, whose memory the graph must outlive."""

        def add_copy(self, copy: CapturedCopy, arrays: tuple) -> None:
            """Take a copy made (CUDA) or to be made at each replay (CPU) between `arrays`."""


def current() -> Capture | None:
    """The capture this thread's launches and copies go into, if any."""
    if not open_captures:
        return None
    return getattr(_tls, "capture", None)


def check_none_open() -> None:
    """GraphError when this thread captures already (captures do not nest)."""
    if current() is not None:
        raise GraphError("a graph capture is already open on this thread", user_location(),
                         hint="end the `with gpunb.graph():` block before opening another one "
                              "(graphs do not nest)")


def enter(capture: Capture) -> None:
    """Make `capture` this thread's (one at a time: captures do not nest)."""
    global open_captures
    check_none_open()
    with _lock:
        open_captures += 1
    _tls.capture = capture


def leave(capture: Capture) -> None:
    """This thread's capture ended."""
    global open_captures
    if getattr(_tls, "capture", None) is capture:
        _tls.capture = None
        with _lock:
            open_captures -= 1


def stream_for(capture: Capture, stream) -> int:
    """The stream a launch or copy inside `capture` goes on: the capture's own for the default
    streams (0, legacy, per-thread) and for itself; another stream only where it captures into
    the same graph (joined with an event, as CUDA's fork-join captures do)."""
    if capture.target == "cpu":
        return 0
    handle = stream_handle(stream)
    if handle in (0, 1, 2) or handle == capture.stream:
        return capture.stream
    from gpunb.backends.cuda import graphs

    state, capture_id = graphs.capture_state(handle)
    if state == "active" and capture_id == capture.capture_id:
        return handle
    raise GraphError(f"work on stream {handle:#x} inside a graph capture: that stream does not "
                     "capture into this graph, so the work would run now, once", user_location(),
                     hint="leave the stream out (the graph's stream is used) or pass the "
                          "graph's own: g.stream")


def refuse(action: str, hint: str) -> None:
    """GraphError when this thread captures: `action` cannot be part of a graph."""
    if open_captures and current() is not None:
        raise GraphError(f"{action} inside a graph capture (`with gpunb.graph():`)",
                         user_location(), hint=hint)


def refuse_synchronize(what: str) -> None:
    """A wait for the GPU cannot be captured (nothing runs while a graph is captured)."""
    refuse(f"{what} waits for the GPU, which cannot happen",
           "nothing runs while a graph is captured: synchronize after the block, or after "
           "g.replay()")


def refuse_allocation(what: str) -> None:
    """Memory allocated inside a capture would be gone by the replay."""
    refuse(f"{what} allocates memory, which cannot happen",
           "allocate the arrays before the `with gpunb.graph():` block (cuda.device_array, "
           "cuda.to_device, cuda.pinned_array) and copy into them inside it")


def memory_owner(value) -> Any:
    """The object whose death frees the memory `value` works on: a gpunb device array's
    allocation (or the foreign object it views), the numpy array at the root of a view chain,
    a torch tensor's base, a CuPy array's base; `value` itself otherwise."""
    memory = getattr(value, "gpu_data", None)
    if memory is not None and hasattr(memory, "owner"):  # a gpunb DeviceArray's allocation
        return memory if memory.owner is None else memory_owner(memory.owner)
    inner = getattr(value, "_array", None)
    if inner is not None and getattr(value, "__gpunb_device_array__", None) == "cpu":
        value = inner  # a HostDeviceArray: its numpy memory
    for attribute in ("_base", "base"):  # torch keeps a view's base in _base
        for _ in range(64):
            base = getattr(value, attribute, None)
            if base is None or not hasattr(base, "shape"):
                break  # the root: a buffer without a shape owns the memory through it
            value = base
    return value
