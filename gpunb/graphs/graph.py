"""gpunb.graph(): capture a block's kernel launches and copies once, replay them with one call.

    with gpunb.graph() as g:          # nothing runs in the block: launches and copies are
        for _ in range(100):          # recorded (kernels launched for the first time compile)
            step[blocks, 256](x, y)
    g.replay()                        # all of it, on a GPU with one cuGraphLaunch
    g.update(0, x=other_x)            # new arguments for launch 0 (same types and shapes)

On a GPU the block is captured into a CUDA graph on a stream of its own (engines.CudaEngine); on
the CPU target the graph is its list of records, replayed in order (engines.CpuEngine). The API
and the rules are the same on both (runtime/capture.py: what cannot be captured raises
GraphError), so a notebook written on the CPU target captures on a GPU. A failed block ends
its capture, so the stream takes work again, and leaves the graph unusable with the reason.
"""

from __future__ import annotations

import numpy as np

from gpunb.foundation import events
from gpunb.foundation.errors import GraphError, LaunchError
from gpunb.graphs import updates
from gpunb.graphs.engines import CpuEngine, CudaEngine, default_stream_error, is_default_stream
from gpunb.graphs.memory import MemoryWatch
from gpunb.graphs.table import graph_nodes, html_table, text_table
from gpunb.runtime import capture as capture_state
from gpunb.runtime.capture import CapturedCopy, CapturedLaunch


class Graph:
    """A captured graph: `replay()`, `update(...)`, and what it holds (`launches`, `nodes`).

    Made by `with gpunb.graph() as g:`; usable once the block has ended without an error."""

    def __init__(self, engine, target: str):
        self.target = target  # "cuda" or "cpu"
        self._engine = engine
        self._items: list = []  # CapturedLaunch and CapturedCopy records, in capture order
        self._launches: list = []
        self._copies = 0
        self._memory = MemoryWatch()
        self._state = "capturing"  # then "ready", "failed" or "closed"
        self._failure = ""

    @property
    def stream(self):
        """The stream the graph was captured on (a gpunb Stream; the CPU target's stream)."""
        return self._engine.stream

    @property
    def launches(self) -> tuple:
        """The kernel launches captured, in order (each with kernel, grid, block, shapes)."""
        return tuple(self._launches)

    @property
    def nodes(self) -> tuple:
        """Every node: gpunb's launches and copies in capture order, then (on a GPU) work
        captured from the stream that gpunb did not launch."""
        return graph_nodes(self)

    def replay(self, stream=0) -> None:
        """Run everything captured again, on `stream` (the default stream; any stream object
        gpunb takes, CuPy's and PyTorch's too). Asynchronous on a GPU, like a launch."""
        self._check_usable("g.replay()")
        capture_state.refuse("replaying a graph", "replay it after the `with gpunb.graph():` "
                             "block has ended")
        self._memory.check("g.replay()")
        handle = 0
        if self.target == "cuda":
            from gpunb.backends.cuda.launch import stream_handle

            handle = stream_handle(stream)
        self._engine.replay(handle)

    def update(self, which, **arguments) -> None:
        """Give launch `which` (an index into `launches`, a record, or a kernel: every launch of
        it) new arguments by name, of the captured types and shapes: `g.update(0, x=d_x2)`."""
        self._check_usable("g.update()")
        chosen = updates.select(self._launches, which)
        if not arguments:
            raise GraphError("update: no arguments given",
                             hint="name them as the kernel does: g.update(0, x=new_x)")
        plans = [(launch, updates.checked_positions(launch, arguments)) for launch in chosen]
        rewritten = [(launch, positions, updates.rewritten(launch, positions))
                     for launch, positions in plans]  # (all before any node changes)
        for launch, positions, params in rewritten:
            launch.params = params
            self._engine.set_arguments(launch)
            names = updates.parameter_names(launch)
            for k, value in positions:
                self._watch_argument(launch, k, names[k], value)

    def close(self) -> None:
        """Free the graph now (it is freed when garbage collected otherwise)."""
        self._engine.close()
        self._state = "closed"

    # ---- what the capture calls (runtime/capture.Capture, through _Recorder) -----------------

    def _add_launch(self, launch: CapturedLaunch, args: tuple) -> None:
        launch.index = len(self._launches)
        self._engine.add_launch(launch)
        self._launches.append(launch)
        self._items.append(launch)
        names = updates.parameter_names(launch)
        for k, value in enumerate(args):
            if not _is_scalar(value):
                self._watch_argument(launch, k, names[k], value)

    def _watch_argument(self, launch: CapturedLaunch, k: int, name: str, value) -> None:
        if _is_scalar(value):
            self._memory.forget(("launch", launch.index, k))
            return
        self._memory.watch(("launch", launch.index, k), value,
                           f"argument '{name}' of launch {launch.index} ({launch.name})")

    def _add_copy(self, copy: CapturedCopy, arrays: tuple) -> None:
        self._engine.add_copy(copy)
        number = self._copies
        self._copies += 1
        self._items.append(copy)
        for k, array in enumerate(arrays):
            role = "destination" if k == 0 else "source"
            self._memory.watch(("copy", number, k), array,
                               f"the {role} of copy {number} ({copy.kind})")

    def _check_usable(self, action: str) -> None:
        if self._state == "ready":
            return
        if self._state == "capturing":
            raise GraphError(f"{action} inside the `with gpunb.graph():` block that captures "
                             "this graph", hint="call it after the block has ended")
        if self._state == "closed":
            raise GraphError(f"{action}: this graph was closed (g.close())",
                             hint="capture it again")
        raise GraphError(f"{action}: this graph's capture failed ({self._failure})",
                         hint="fix what the capture raised and capture again")

    # ---- display ----------------------------------------------------------------------------

    def __repr__(self) -> str:
        return text_table(self)

    def _repr_html_(self) -> str:
        return html_table(self)


def _is_scalar(value) -> bool:
    """Passed by value (numbers, tuples, numpy scalars and records): no memory to watch."""
    return isinstance(value, (int, float, complex, np.generic)) or not hasattr(value, "shape")


class _Recorder:
    """The Capture (runtime/capture.py) this thread's launches and copies go into."""

    __slots__ = ("graph", "target", "stream", "capture_id")

    def __init__(self, graph: Graph, engine):
        self.graph = graph
        self.target = graph.target
        self.stream = engine.handle
        self.capture_id = 0

    def add_launch(self, launch: CapturedLaunch, args: tuple) -> None:
        self.graph._add_launch(launch, args)

    def add_copy(self, copy: CapturedCopy, arrays: tuple) -> None:
        self.graph._add_copy(copy, arrays)


class GraphCapture:
    """`with gpunb.graph(...) as g:` - opens the capture, hands out the Graph, ends it."""

    def __init__(self, stream=None, target: str | None = None):
        self._stream = stream
        self._target = target
        self._recorder: _Recorder | None = None

    def __enter__(self) -> Graph:
        from gpunb.runtime.target import active_target

        capture_state.check_none_open()  # (before a stream is made for the graph)
        target = active_target(self._target)
        engine = _engine_for(target, self._stream)
        graph = Graph(engine, target)
        recorder = _Recorder(graph, engine)
        capture_state.enter(recorder)  # (raises when this thread captures already)
        try:
            engine.begin()
        except BaseException:
            capture_state.leave(recorder)
            raise
        recorder.capture_id = engine.capture_id
        self._recorder = recorder
        # launchers bound before launch no more: this thread's launches take the Python path,
        # which records them (jit/configuration.py)
        events.runtime_changed(events.RuntimeChange.CAPTURE)
        return graph

    def __exit__(self, exc_type, exc, tb) -> bool:
        recorder, self._recorder = self._recorder, None
        graph = recorder.graph
        capture_state.leave(recorder)
        engine = graph._engine
        if exc_type is not None:
            engine.abandon()  # the stream takes work again
            graph._state, graph._failure = "failed", f"{exc_type.__name__}: {exc}"
            if _is_capture_error(exc):
                raise GraphError(f"the graph capture failed: {exc}", hint=getattr(
                    exc, "hint", None)) from exc
            return False
        try:
            engine.end()
        except LaunchError as error:
            engine.abandon()
            graph._state, graph._failure = "failed", str(error).splitlines()[0]
            raise GraphError(f"the graph capture could not be completed: "
                             f"{str(error).splitlines()[0]}",
                             hint="something in the block invalidated the capture (a "
                                  "synchronisation, an allocation or a pageable copy made "
                                  "by another library): move it out of the block") from error
        graph._state = "ready"
        return False


def _engine_for(target: str, stream):
    if target != "cuda":
        from gpunb.runtime.streams import CpuStream

        if stream is not None and is_default_stream(stream):
            raise default_stream_error()  # refused on every target, as CUDA refuses it
        return CpuEngine(CpuStream())
    from gpunb.backends.cuda import driver
    from gpunb.runtime.streams import Stream

    driver.ensure_context()
    if stream is None:  # non-blocking: other threads' work on the legacy default stream goes
        return CudaEngine(Stream.create(non_blocking=True))  # on while this thread captures
    if not isinstance(stream, Stream):
        from gpunb.backends.cuda.launch import stream_handle

        stream = Stream(stream_handle(stream), _external=True)
    return CudaEngine(stream)


def _is_capture_error(exc: BaseException) -> bool:
    name = getattr(exc, "name", "")
    return isinstance(exc, LaunchError) and not isinstance(exc, GraphError) and \
        isinstance(name, str) and name.startswith("CUDA_ERROR_STREAM_CAPTURE")


def graph(*, stream=None, target: str | None = None) -> GraphCapture:
    """`with gpunb.graph() as g:` records the block's kernel launches and copies into `g`
    instead of running them; `g.replay()` runs them all again.

    `stream`: the stream to capture on (a new stream of the graph's own by default; never a
    default stream); `target`: "cuda", "cpu" or "auto" (default: the active target)."""
    return GraphCapture(stream, target)
