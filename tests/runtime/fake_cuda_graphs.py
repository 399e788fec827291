"""Stream capture and CUDA graphs for the simulated driver (fake_cuda_driver.FakeDriver).

It keeps the driver's rules that gpunb's graph code relies on: work issued on a capturing stream
becomes a node instead of running (a launch records its kernelParams address, a copy its
addresses); the legacy default stream and a synchronisation refuse while this thread captures
and invalidate the capture (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT / _UNSUPPORTED); ending an
invalidated capture fails and leaves the stream usable; a replay runs the nodes in order
(launches are appended to `launches`, copies are made); SetParams swaps a node's kernelParams.
Results are shaped like cuda.bindings 13's.

Capture-interaction modes, as measured on the H200 (driver 580): a thread whose mode
(cuThreadExchangeStreamCaptureMode; GLOBAL by default) is not RELAXED may not make the
"potentially unsafe" calls (`_unsafe`: frees, unloads, cuGraphExecDestroy, allocations, stream
and event queries) while it captures itself, nor, in GLOBAL mode, while another thread captures
in GLOBAL mode: refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, those captures invalidated.
cuCtxSynchronize is refused while any stream captures, whatever the mode.
"""

from __future__ import annotations

import ctypes
import threading

from cuda.bindings import driver as real

OK = real.CUresult.CUDA_SUCCESS
_STATUS = real.CUstreamCaptureStatus
_TYPE = real.CUgraphNodeType


class FakeGraphs:
    """Mixed into FakeDriver: capture state per stream, graphs, executable graphs."""

    def _init_graphs(self):
        self.captures: dict = {}  # stream -> {"id", "nodes", "invalidated"}
        self.graphs: dict = {}  # graph handle -> list of nodes
        self.execs: dict = {}  # exec handle -> list of [node, kernelParams] (a copy)
        self.nodes: dict = {}  # node handle -> node dict
        self.pinned: dict = {}  # host address -> buffer (cuMemHostAlloc)
        self.stream_flags: dict = {}  # stream -> its cuStreamCreate flags
        self._next = 0
        self._modes = threading.local()  # .mode: this thread's capture-interaction mode

    def _handle(self, base: int) -> int:
        self._next += 1
        return base + self._next

    def _capturing(self, stream) -> dict | None:
        return self.captures.get(int(stream or 0))

    def _implicit(self, stream) -> tuple | None:
        """The legacy stream while a blocking stream captures (it would wait for the capture):
        refused, that capture invalidated. Non-blocking streams do not order with it."""
        if int(stream or 0) not in (0, 1):
            return None
        blocking = [c for s, c in self.captures.items() if not self.stream_flags.get(s, 0) & 1]
        for capture in blocking:
            capture["invalidated"] = True
        return (real.CUresult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,) if blocking else None

    def _add_node(self, stream, node: dict):
        capture = self._capturing(stream)
        handle = self._handle(0xB000)
        node["handle"] = handle
        self.nodes[handle] = node
        capture["nodes"].append(node)
        return OK

    def _unsafe(self, name: str, args: tuple) -> tuple | None:
        """The driver's refusal of a potentially unsafe call from this thread (see the module
        docstring), the captures that forbid it invalidated; None when it is allowed."""
        modes = real.CUstreamCaptureMode
        mine = getattr(self._modes, "mode", modes.CU_STREAM_CAPTURE_MODE_GLOBAL)
        if mine == modes.CU_STREAM_CAPTURE_MODE_RELAXED:
            return None
        me = threading.get_ident()
        forbidding = [c for c in self.captures.values()
                      if c["mode"] != modes.CU_STREAM_CAPTURE_MODE_RELAXED and (
                          c["thread"] == me or (mine == modes.CU_STREAM_CAPTURE_MODE_GLOBAL and
                                                c["mode"] == modes.CU_STREAM_CAPTURE_MODE_GLOBAL))]
        if not forbidding:
            return None
        for capture in forbidding:
            capture["invalidated"] = True
        self.calls.append((name, args))
        self.refused.append(name)
        return (real.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)

    def cuThreadExchangeStreamCaptureMode(self, mode):
        previous = getattr(self._modes, "mode",
                           real.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL)
        self._modes.mode = mode
        return (OK, previous)

    # ---- capture ----
    def cuStreamBeginCapture(self, stream, mode):
        self.calls.append(("cuStreamBeginCapture", (stream, mode)))
        if int(stream) in (0, 1, 2) or self._capturing(stream) is not None:
            return (real.CUresult.CUDA_ERROR_INVALID_VALUE,)
        self.captures[int(stream)] = {"id": self._handle(0), "nodes": [], "invalidated": False,
                                      "thread": threading.get_ident(), "mode": mode}
        return (OK,)

    def cuStreamEndCapture(self, stream):
        self.calls.append(("cuStreamEndCapture", (stream,)))
        capture = self.captures.pop(int(stream), None)
        if capture is None:
            return (real.CUresult.CUDA_ERROR_ILLEGAL_STATE, None)
        if capture["invalidated"]:
            return (real.CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, None)
        graph = self._handle(0xA000)
        self.graphs[graph] = capture["nodes"]
        return (OK, real.CUgraph(graph))

    def cuStreamGetCaptureInfo(self, stream):
        if int(stream or 0) in (0, 1) and any(not self.stream_flags.get(s, 0) & 1
                                              for s in self.captures):
            # the legacy stream while a blocking stream captures: an answer, nothing invalidated
            return (real.CUresult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, None, 0, None, [], None, 0)
        capture = self._capturing(stream)
        if capture is None:
            return (OK, _STATUS.CU_STREAM_CAPTURE_STATUS_NONE, 0, None, [], None, 0)
        if capture["invalidated"]:
            return (OK, _STATUS.CU_STREAM_CAPTURE_STATUS_INVALIDATED, 0, None, [], None, 0)
        last = [real.CUgraphNode(capture["nodes"][-1]["handle"])] if capture["nodes"] else []
        return (OK, _STATUS.CU_STREAM_CAPTURE_STATUS_ACTIVE, capture["id"], None, last, None,
                len(last))

    def cuCtxSynchronize(self):
        if self.captures:
            for capture in self.captures.values():
                capture["invalidated"] = True
            return (real.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)
        return self._call("cuCtxSynchronize", ())

    # ---- graphs ----
    def cuGraphInstantiate(self, graph, flags):
        self.calls.append(("cuGraphInstantiate", (graph, flags)))
        handle = self._handle(0xC000)
        self.execs[handle] = [[node, node.get("params")] for node in self.graphs[int(graph)]]
        return (OK, real.CUgraphExec(handle))

    def cuGraphLaunch(self, graph_exec, stream):
        self.calls.append(("cuGraphLaunch", (graph_exec, stream)))
        for node, params in self.execs[int(graph_exec)]:
            if node["type"] == "kernel":
                self.launches.append(("graph kernel", node["grid"], node["block"],
                                      node["shared"], int(stream or 0), params))
            else:
                ctypes.memmove(node["dst"], node["src"], node["nbytes"])
        return (OK,)

    def cuGraphKernelNodeGetParams(self, node):
        found = self.nodes[int(node)]
        params = real.CUDA_KERNEL_NODE_PARAMS()
        (params.gridDimX, params.gridDimY, params.gridDimZ) = found["grid"]
        (params.blockDimX, params.blockDimY, params.blockDimZ) = found["block"]
        params.sharedMemBytes = found["shared"]
        params.kernelParams = found["params"]
        return (OK, params)

    def cuGraphExecKernelNodeSetParams(self, graph_exec, node, params):
        self.calls.append(("cuGraphExecKernelNodeSetParams", (graph_exec, node)))
        for entry in self.execs[int(graph_exec)]:
            if entry[0]["handle"] == int(node):
                entry[1] = int(params.kernelParams)
                return (OK,)
        return (real.CUresult.CUDA_ERROR_INVALID_VALUE,)

    def cuGraphGetNodes(self, graph, count=0):
        nodes = self.graphs[int(graph)]
        if not count:
            return (OK, [], len(nodes))
        return (OK, [real.CUgraphNode(n["handle"]) for n in nodes[:count]], len(nodes))

    def cuGraphNodeGetType(self, node):
        kind = self.nodes[int(node)]["type"]
        return (OK, _TYPE.CU_GRAPH_NODE_TYPE_KERNEL if kind == "kernel" else
                _TYPE.CU_GRAPH_NODE_TYPE_MEMCPY)

    def cuGraphDestroy(self, graph):
        self.calls.append(("cuGraphDestroy", (graph,)))
        self.graphs.pop(int(graph), None)
        return (OK,)

    def cuGraphExecDestroy(self, graph_exec):
        refused = self._unsafe("cuGraphExecDestroy", (graph_exec,))
        if refused:
            return refused
        self.calls.append(("cuGraphExecDestroy", (graph_exec,)))
        self.execs.pop(int(graph_exec), None)
        return (OK,)

    # ---- page-locked host memory ----
    def cuMemHostAlloc(self, nbytes, flags):
        refused = self._unsafe("cuMemHostAlloc", (nbytes, flags))
        if refused:
            return refused + (None,)
        buffer = ctypes.create_string_buffer(max(int(nbytes), 1))
        self.pinned[ctypes.addressof(buffer)] = buffer
        return self._call("cuMemHostAlloc", (nbytes, flags), ctypes.addressof(buffer))

    def cuMemFreeHost(self, ptr):
        refused = self._unsafe("cuMemFreeHost", (ptr,))
        if refused:
            return refused
        self.pinned.pop(int(ptr), None)
        return self._call("cuMemFreeHost", (ptr,))

    def cuPointerGetAttribute(self, attribute, ptr):
        for start, buffer in self.pinned.items():
            if start <= int(ptr) < start + len(buffer):
                return (OK, int(real.CUmemorytype.CU_MEMORYTYPE_HOST))
        return (real.CUresult.CUDA_ERROR_INVALID_VALUE, None)
