"""Backends as objects and the one compile(): stages, stop_after, events, load and launch."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import backends
from gpunb.backends.pipeline import compile
from gpunb.foundation import events
from gpunb.foundation import types as t
from gpunb.foundation.events import EventKind, Stage

ARGS = (t.Array(t.float32, 1, "C"), t.Array(t.float32, 1, "C"), t.float32)


def scale(out, x, a):
    i = 0
    while i < out.size:
        out[i] = x[i] * a
        i += 1


def test_the_table_names_both_backends_and_nothing_else():
    cuda, cpu = backends.get("cuda"), backends.get("cpu")
    assert (cuda.name, cpu.name) == ("cuda", "cpu") and backends.NAMES == ("cuda", "cpu")
    assert cuda.stages == (Stage.TYPES, Stage.LLVM, Stage.PTX, Stage.LINK)
    assert cpu.stages == (Stage.TYPES, Stage.LLVM, Stage.HOST_CODE)
    assert isinstance(cuda, backends.Backend) and backends.get("cuda") is cuda
    with pytest.raises(ValueError, match="unknown backend 'rocm'"):
        backends.get("rocm")


@pytest.mark.parametrize("stage", [Stage.TYPES, Stage.LLVM, Stage.PTX])
def test_cuda_stops_after_any_stage_without_a_gpu(stage):
    done = compile(scale, ARGS, {}, backends.get("cuda"), stop_after=stage, arch=(8, 0))
    assert done.stage is stage and done.typed.name == "scale"
    assert (done.builder is None) == (stage is Stage.TYPES)
    assert (done.artifact is None) == (stage is not Stage.PTX)
    if stage is Stage.PTX:
        assert ".target sm_80" in done.artifact.ptx and done.artifact.binary == b""
        assert done.artifact.arch == "sm_80" and done.artifact.target == "cuda"


def test_a_stage_the_backend_lacks_is_refused():
    with pytest.raises(ValueError, match="the cpu backend has no stage PTX"):
        compile(scale, ARGS, {}, backends.get("cpu"), stop_after=Stage.PTX)


def test_cpu_builds_loads_and_launches_through_the_program():
    from gpunb.runtime.packing import ArgPacker

    cpu = backends.get("cpu")
    artifact = compile(scale, ARGS, {}, cpu).artifact
    assert artifact.target == "cpu" and artifact.binary and "scale" in artifact.symbol
    # the compile makes no assembly; asking makes it from the optimised IR, once
    assert artifact.asm == "" and "define" in artifact.llvm_ir
    asm = cpu.assembly(artifact)
    assert f"{artifact.symbol}:" in asm and cpu.assembly(artifact) is asm
    program = cpu.load(artifact)
    x = np.arange(5, dtype=np.float32)
    out = np.zeros_like(x)
    params, _ = ArgPacker(artifact.param_slots, "cpu", "scale").pack((out, x, 3.0), ARGS)
    program.launch(1, 1, 0, 0, params)
    np.testing.assert_array_equal(out, x * 3.0)
    assert program.limits["max_threads_per_block"] == 1024
    assert cpu.max_cooperative_blocks(program, 256) == program.max_cooperative_blocks(256) > 0
    assert cpu.max_active_blocks_per_sm(program, 256) is None  # no device to ask


def test_cpu_assembly_is_the_code_the_object_was_made_from():
    """The IR kept is the one the object was made from (taken before code generation changes
    the module), so the assembly made from it on request is the object's code; an entry cached
    with its own assembly keeps it."""
    import dataclasses

    import llvmlite.binding as llvm

    from gpunb.backends.cpu.target import host_target_machine

    cpu = backends.get("cpu")
    artifact = compile(scale, ARGS, {}, cpu).artifact
    again = host_target_machine().emit_object(llvm.parse_assembly(artifact.llvm_ir))
    assert again == artifact.binary
    assert f"{artifact.symbol}:" in cpu.assembly(artifact)
    kept = dataclasses.replace(artifact, asm="; an older entry's assembly")
    assert cpu.assembly(kept) == "; an older entry's assembly"


def test_build_is_compile_without_events():
    from gpunb.compiler.pipeline import infer_kernel

    cpu = backends.get("cpu")
    typed = infer_kernel(scale, ARGS, {})
    seen = []
    with events.subscribe(list(EventKind), seen.append):
        built = cpu.build(typed, {})
    assert seen == [] and built.symbol == compile(scale, ARGS, {}, cpu).artifact.symbol


def test_compile_publishes_each_stage_in_order():
    seen = []
    kinds = [EventKind.COMPILE_STARTED, EventKind.STAGE_STARTED, EventKind.STAGE_FINISHED,
             EventKind.COMPILE_FINISHED]
    with events.subscribe(kinds, seen.append):
        compile(scale, ARGS, {}, backends.get("cpu"))
    assert [(e.kind.value, e.stage and e.stage.value) for e in seen] == [
        ("compile_started", None),
        ("stage_started", "types"), ("stage_finished", "types"),
        ("stage_started", "LLVM"), ("stage_finished", "LLVM"),
        ("stage_started", "host code"), ("stage_finished", "host code"),
        ("compile_finished", None)]
    assert {(e.kernel, e.signature, e.target) for e in seen} == {
        ("scale", "void(float32[::1], float32[::1], float32)", "cpu")}
    assert all(e.ms >= 0 and e.error == "" for e in seen) and seen[-1].ms > 0


def bad(out):
    out[0] = undefined_name  # noqa: F821 - the point of the test


def test_a_failed_compile_still_finishes_with_the_error():
    seen = []
    with events.subscribe(["stage_finished", "compile_finished"], seen.append):
        with pytest.raises(Exception, match="undefined_name"):
            compile(bad, (t.Array(t.float32, 1, "C"),), {}, backends.get("cpu"))
    assert [e.kind for e in seen] == [EventKind.STAGE_FINISHED, EventKind.COMPILE_FINISHED]
    assert seen[0].stage is Stage.TYPES and "undefined_name" in seen[-1].error


def test_the_collector_is_paused_for_a_compile_and_resumed_after_it():
    """A compile runs with Python's cyclic collector off (its temporaries die young instead of
    being promoted into a large heap's old generations), and leaves it as it found it: on
    after a compile that succeeded or failed, off where the caller had turned it off."""
    import gc

    during = []
    with events.subscribe([EventKind.STAGE_STARTED], lambda e: during.append(gc.isenabled())):
        compile(scale, ARGS, {}, backends.get("cpu"))
        assert during == [False, False, False] and gc.isenabled()
        with pytest.raises(Exception, match="undefined_name"):
            compile(bad, (t.Array(t.float32, 1, "C"),), {}, backends.get("cpu"))
        assert gc.isenabled()
        gc.disable()
        try:
            compile(scale, ARGS, {"fastmath": True}, backends.get("cpu"))
            assert not gc.isenabled()
        finally:
            gc.enable()
