"""A launch inside a graph capture: `kernel[grid, block](args)` becomes a record of the capture
(runtime/capture.CapturedLaunch) instead of running now.

jit/configuration.py sends a launch here while its thread captures (`with gpunb.graph():`). The
checks are those of an eager launch - argument count and kinds, the specialisation (compiled
here if new), the configuration against the kernel's limits - plus what a graph cannot hold:
a kernel of the other target, a debug kernel that waits after each launch to raise, arguments
copied for each launch. The packed parameters are copied out of the packer
(runtime/packing.PackedParams): they are what the graph's node reads at each replay, and what
`Graph.update` rewrites. The capture itself (gpunb/graphs) launches the record on its stream
(CUDA: the driver captures it) or keeps it for its replay (the CPU target).
"""

from __future__ import annotations

import numpy as np

from gpunb.backends.launch_config import validate_config
from gpunb.foundation.errors import GraphError
from gpunb.runtime import capture as capture_state
from gpunb.runtime.capture import CapturedLaunch


def launch_into(capture, config, args: tuple) -> None:
    """Record `config(*args)` (a LaunchConfiguration's launch) into `capture`."""
    dispatcher = config.dispatcher
    name = dispatcher.__name__
    if dispatcher.has_extensions:
        raise GraphError(f"kernel '{name}' has numba argument extensions, whose preparations "
                         "and cleanups run around each launch; a graph would skip them",
                         function=name, hint="launch it outside the capture")
    spec, _key, _new = dispatcher.specialization_for_launch(args)
    if spec.target != capture.target:
        raise GraphError(f"kernel '{name}' runs on the {spec.target} target, but this graph "
                         f"captures {capture.target} work", function=name,
                         hint="capture each target's launches in a graph of its own "
                              "(gpunb.graph(target=...))")
    artifact = spec.artifact
    if artifact.raise_sites and spec.target == "cuda":
        raise GraphError(f"kernel '{name}' was compiled with debug=True: each launch waits for "
                         "the GPU to report an exception, which a graph cannot do",
                         function=name, hint="capture a build without debug=True")
    if spec.target == "cuda":
        _refuse_host_arrays(args, name)
    program = spec.program
    shared = int(config.sharedmem or 0)
    grid, block = validate_config(config.grid, config.block, program.limits,
                                  shared + artifact.resources.shared_bytes, name)
    params = spec.packer.snapshot(args, spec.argtypes)
    shapes = tuple(tuple(getattr(a, "shape", ())) if not isinstance(a, np.generic) else ()
                   for a in args)
    record = CapturedLaunch(dispatcher, spec, grid, block, shared, params, shapes)
    record.stream = capture_state.stream_for(capture, config.stream)
    capture.add_launch(record, args)


def _refuse_host_arrays(args: tuple, name: str) -> None:
    """Host numpy arrays are copied to the GPU and back around each eager launch: say so here,
    before the packer would allocate for them."""
    for k, value in enumerate(args):
        inner = getattr(value, "value", value)  # cuda.In / Out / InOut
        if isinstance(inner, np.ndarray) and not hasattr(inner, "__cuda_array_interface__"):
            raise GraphError(f"argument {k + 1} of '{name}' is a host numpy array, which is "
                             "copied to the GPU and back around each launch; a graph cannot "
                             "repeat those copies", function=name,
                             hint="copy it to the GPU before the capture (d = cuda.to_device(a)) "
                                  "and pass d; inside the capture, refresh it with "
                                  "d.copy_to_device(pinned_host_array)")
