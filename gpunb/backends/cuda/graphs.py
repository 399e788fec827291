"""CUDA graphs through the driver: stream capture, instantiation, replay, kernel-node updates.

Thin typed calls over cuda.bindings for gpunb.graph (gpunb/graphs): a capture runs on a stream
of its own in CU_STREAM_CAPTURE_MODE_THREAD_LOCAL (a synchronising call from the capturing
thread is refused by the driver and invalidates the capture; other threads are not affected),
each captured operation's node is read back from the stream's capture information, and an
update rewrites one kernel node's parameters in the instantiated graph. Handles are plain
ints; every failure goes through driver.check.
"""

from __future__ import annotations

from gpunb.backends.cuda import capture_safe, driver

# the driver version from which kernels may be loaded while a stream captures (CUDA 12.3): a
# first launch inside a capture compiles and loads its module there
LOADS_DURING_CAPTURE = (12, 3)


def begin_capture(stream: int) -> None:
    """Start capturing `stream` (a non-default stream) for this thread."""
    cu = driver.cuda_driver()
    mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    driver.check(cu.cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture")
    capture_safe.capture_began(stream)


def end_capture(stream: int) -> int:
    """End the capture of `stream`: the captured graph's handle. A capture that an operation
    invalidated raises (the stream no longer captures either way)."""
    cu = driver.cuda_driver()
    try:
        return int(driver.check(cu.cuStreamEndCapture(stream), "cuStreamEndCapture"))
    finally:
        capture_safe.capture_ended(stream)


def abandon_capture(stream: int) -> None:
    """End a capture whose graph is not wanted (the block failed): whatever it captured is
    destroyed, invalidated or not, and the stream takes work again."""
    cu = driver.cuda_driver()
    capture_safe.capture_ended(stream)
    try:
        result = cu.cuStreamEndCapture(stream)
    except Exception:  # noqa: BLE001 - a destroyed context: nothing is left to end
        return
    if not result[0] and result[1] is not None and int(result[1]):
        cu.cuGraphDestroy(result[1])


def capture_state(stream: int) -> tuple:
    """(status name: "none", "active" or "invalidated", capture id or 0) of `stream`."""
    cu = driver.cuda_driver()
    result = cu.cuStreamGetCaptureInfo(stream)
    if result[0]:
        raise driver.driver_error(result[0], "cuStreamGetCaptureInfo")
    status = result[1]
    name = status.name.removeprefix("CU_STREAM_CAPTURE_STATUS_").lower() if \
        hasattr(status, "name") else ("none", "active", "invalidated")[int(status)]
    capture_id = int(result[2]) if name == "active" and result[2] is not None else 0
    return name, capture_id


def last_node(stream: int) -> int:
    """The node the operation just captured on `stream` became: what the next captured
    operation would depend on (cuStreamGetCaptureInfo's dependencies; one, on a stream that
    captures on its own)."""
    cu = driver.cuda_driver()
    result = cu.cuStreamGetCaptureInfo(stream)
    if result[0]:
        raise driver.driver_error(result[0], "cuStreamGetCaptureInfo")
    # (err, status, id, graph, dependencies, [edge data,] count): 12.x and 13.x bindings alike
    dependencies = result[4] or []
    if not dependencies:
        return 0
    return int(dependencies[-1])


def instantiate(graph: int) -> int:
    """The executable graph of a captured one."""
    cu = driver.cuda_driver()
    return int(driver.check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate"))


def launch(graph_exec: int, stream: int) -> None:
    """Replay an executable graph on `stream` (0: the legacy default stream)."""
    cu = driver.cuda_driver()
    driver.check(cu.cuGraphLaunch(graph_exec, stream), "cuGraphLaunch")


def set_kernel_arguments(graph_exec: int, node: int, params_address: int) -> None:
    """Give kernel node `node` of `graph_exec` new arguments (`params_address`: a void*[] of
    the parameter values, read during this call); grid, block and function stay."""
    cu = driver.cuda_driver()
    params = driver.check(cu.cuGraphKernelNodeGetParams(node), "cuGraphKernelNodeGetParams")
    params.kernelParams = params_address
    driver.check(cu.cuGraphExecKernelNodeSetParams(graph_exec, node, params),
                 "cuGraphExecKernelNodeSetParams")


def nodes(graph: int) -> list:
    """[(node handle, type name: "kernel", "memcpy", ...)] of every node of `graph`."""
    cu = driver.cuda_driver()
    count = driver.check(cu.cuGraphGetNodes(graph, 0), "cuGraphGetNodes")
    count = int(count[1] if isinstance(count, tuple) else count)
    if not count:
        return []
    found = driver.check(cu.cuGraphGetNodes(graph, count), "cuGraphGetNodes")
    handles = found[0] if isinstance(found, tuple) else found
    out = []
    for handle in handles[:count]:
        kind = driver.check(cu.cuGraphNodeGetType(handle), "cuGraphNodeGetType")
        out.append((int(handle), kind.name.removeprefix("CU_GRAPH_NODE_TYPE_").lower()))
    return out


def kernel_node_shape(node: int) -> tuple:
    """(grid, block, dynamic shared bytes) of a kernel node."""
    cu = driver.cuda_driver()
    p = driver.check(cu.cuGraphKernelNodeGetParams(node), "cuGraphKernelNodeGetParams")
    return ((p.gridDimX, p.gridDimY, p.gridDimZ), (p.blockDimX, p.blockDimY, p.blockDimZ),
            p.sharedMemBytes)


def destroy(graph: int, graph_exec: int) -> None:
    """Free an executable graph and its graph (at garbage collection: errors are dropped)."""
    cu = driver.cuda_driver()
    try:
        if graph_exec:  # (the collector may run this inside a capture: capture_safe.py)
            capture_safe.relaxed(cu, cu.cuGraphExecDestroy, graph_exec)
        if graph:
            cu.cuGraphDestroy(graph)
    except Exception:  # noqa: BLE001 - a destroyed context took them along
        pass


def is_pinned(address: int) -> bool:
    """Whether host memory at `address` is page-locked (cuMemHostAlloc'd or registered): only
    such memory can be copied by a captured graph (the copy runs at each replay)."""
    cu = driver.cuda_driver()
    attribute = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
    result = cu.cuPointerGetAttribute(attribute, address)
    if result[0]:
        return False  # memory the driver does not know: pageable
    return int(result[1]) == int(cu.CUmemorytype.CU_MEMORYTYPE_HOST)
