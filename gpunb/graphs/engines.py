"""What a graph does on each target: capture, replay, rewrite a launch's arguments.

`CudaEngine`: stream capture into a CUDA graph (backends/cuda/graphs.py) - each launch and copy
is issued on the capturing stream, where the driver records it as a node instead of running it,
and its node is read back; the captured graph is instantiated once and replayed with one
cuGraphLaunch; an update rewrites one kernel node of the executable graph.
`CpuEngine`: the CPU target has no streams to capture, so the graph is its list of records,
replayed in order: each launch runs its program on the parameters copied at capture (as a GPU
node reads its own copy), each copy copies again.
"""

from __future__ import annotations

import functools
import weakref

from gpunb.backends.cuda import graphs as cuda_graphs
from gpunb.foundation.errors import GraphError, user_location
from gpunb.runtime.capture import CapturedCopy


def is_default_stream(stream) -> bool:
    """Whether a stream object (any target's, numba's, CuPy's, PyTorch's) or an int is a
    default stream: the legacy, the per-thread or stream 0."""
    flag = getattr(stream, "is_default", None)
    if isinstance(flag, bool):
        return flag
    from gpunb.backends.cuda.launch import stream_handle

    return stream_handle(stream) in (0, 1, 2)


def default_stream_error() -> GraphError:
    """Capture on a default stream: CUDA refuses it, and so does the CPU target."""
    return GraphError("a CUDA graph cannot be captured on the default stream", user_location(),
                      hint="leave stream= out (the graph makes a stream of its own) or "
                           "pass a stream made for it: cuda.stream()")


class CudaEngine:
    """A CUDA graph captured on `stream` (a runtime Stream, not a default stream)."""

    target = "cuda"

    def __init__(self, stream):
        self.stream = stream
        self.handle = int(stream.handle)
        if self.handle in (0, 1, 2):
            raise default_stream_error()
        self.capture_id = 0
        self.graph = 0
        self.graph_exec = 0
        self._finalizer = None

    def begin(self) -> None:
        cuda_graphs.begin_capture(self.handle)
        self.capture_id = cuda_graphs.capture_state(self.handle)[1]

    def add_launch(self, launch) -> None:
        launch.spec.launch(launch.grid, launch.block, launch.shared_bytes, launch.stream,
                           launch.params.address)
        launch.node = cuda_graphs.last_node(launch.stream)

    def add_copy(self, copy) -> None:
        copy.node = cuda_graphs.last_node(self.handle)  # the copy was issued on the stream

    def end(self) -> None:
        self.graph = cuda_graphs.end_capture(self.handle)
        self._finalizer = weakref.finalize(self, cuda_graphs.destroy, self.graph, 0)
        self.graph_exec = cuda_graphs.instantiate(self.graph)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, cuda_graphs.destroy, self.graph,
                                           self.graph_exec)
        self._finalizer.atexit = False  # the driver frees everything at exit; it may be gone

    def abandon(self) -> None:
        cuda_graphs.abandon_capture(self.handle)

    def replay(self, stream_handle: int) -> None:
        cuda_graphs.launch(self.graph_exec, stream_handle)

    def set_arguments(self, launch) -> None:
        cuda_graphs.set_kernel_arguments(self.graph_exec, launch.node, launch.params.address)

    def driver_nodes(self) -> list:
        """[(node, type name, (grid, block, shared) for kernels else None)] of the graph."""
        out = []
        for node, kind in cuda_graphs.nodes(self.graph):
            shape = cuda_graphs.kernel_node_shape(node) if kind == "kernel" else None
            out.append((node, kind, shape))
        return out

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()


class CpuEngine:
    """The CPU target's graph: its records, replayed in order (see the module docstring)."""

    target = "cpu"
    handle = 0
    capture_id = 0

    def __init__(self, stream):
        self.stream = stream
        self.items: list = []
        self._steps: list = []  # (run(params address) or None for a copy, record)

    def begin(self) -> None:
        return None

    def add_launch(self, launch) -> None:
        self.items.append(launch)

    def add_copy(self, copy) -> None:
        self.items.append(copy)

    def end(self) -> None:
        """Each launch's run, bound once: the program's checked configuration (what a native
        launcher runs), so a replay repeats no checks."""
        steps = []
        for item in self.items:
            if item.__class__ is CapturedCopy:
                steps.append((None, item))
                continue
            program = item.spec.program
            native = program.native_launch(item.grid, item.block, item.shared_bytes, 0)
            run = native.run if native is not None and native.run is not None else \
                functools.partial(program.launch, item.grid, item.block, item.shared_bytes, 0)
            steps.append((run, item))
        self._steps = steps

    def abandon(self) -> None:
        self.items.clear()

    def replay(self, stream_handle: int) -> None:
        for run, item in self._steps:
            if run is None:
                item.replay()
            else:
                run(item.params.address)  # (an update replaces item.params)

    def set_arguments(self, launch) -> None:
        return None  # the replay reads launch.params, which the update rewrote

    def driver_nodes(self) -> list:
        return []

    def close(self) -> None:
        self.items.clear()
        self._steps = []
