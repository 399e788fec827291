"""The side panel's records, made from events: kernels, failures and profiles, with cell links,
and never by scanning a namespace or compiling to describe a kernel."""

import linecache

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation import events
from gpunb.foundation.sources import register_cell
from gpunb.notebook import panel_feed

CELL = """\
@cuda.jit
def scale_rows(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * a
"""


@pytest.fixture
def feed():
    gpunb.set_target("cpu")
    started = panel_feed.PanelFeed().start()
    yield started
    started.stop()
    gpunb.set_target(None)


def _cell(source: str, number: int, cell_id: str | None = None) -> dict:
    """Run `source` as notebook cell `number` (IPython's way: a synthetic filename in
    linecache, registered as `Cell In[number]`); its namespace."""
    filename = f"/tmp/ipykernel_panel_feed/cell{number}.py"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    register_cell(filename, number)
    if cell_id:
        panel_feed.note_cell(filename, number, {"metadata": {"cellId": cell_id}})
    ns = {"cuda": cuda}
    exec(compile(source, filename, "exec"), ns)  # noqa: S102 - a notebook cell
    return ns


def test_a_new_specialisation_is_one_record_from_its_event(feed):
    kernel = _cell(CELL, 7, "cell-abc")["scale_rows"]
    x = np.arange(32, dtype=np.float32)
    kernel[1, 32](np.zeros_like(x), x, np.float32(2.0))
    kernels, profiles = feed.take(8)
    assert profiles == [] and len(kernels) == 1
    record = kernels[0]
    assert record["name"] == "scale_rows" and "float32[::1]" in record["signature"]
    assert record["defined_at"] == "Cell In[7], line 1" and record["cell"] == 7
    assert record["cell_id"] == "cell-abc"
    assert record["cache"].startswith(("miss", "hit")) and record["target"] == "cpu"
    # the CPU target has no registers or occupancy, and the record says why (nothing compiled
    # to PTX to describe it)
    assert record["registers"] is None and record["occupancy"] is None
    assert record["note"].startswith("CPU target")
    for _ in range(3):
        kernel[1, 32](np.zeros_like(x), x, np.float32(2.0))  # launches: no news
    assert feed.take() == ([], [])
    kernel[1, 32](np.zeros(32), np.arange(32.0), 2.0)  # a new specialisation
    (again,), _ = feed.take()
    assert again["signature"] == "void(float64[::1], float64[::1], float64)"


def test_nothing_scans_a_namespace_or_compiles_to_describe(feed, monkeypatch):
    """A kernel never put in any namespace still gets its record; describing it runs no
    compile stage (no PTX for the CPU target's kernels)."""
    stages = []
    kernel = _cell(CELL.replace("x[i] * a", "x[i] * a + 11.0"), 11)["scale_rows"]
    x = np.arange(8, dtype=np.float32)
    with events.subscribe("compile_started", stages.append):
        kernel[1, 8](np.zeros_like(x), x, np.float32(1.0))
        count = len(stages)
        (record,), _ = feed.take()
        assert len(stages) == count  # describing it compiled nothing
    assert record["name"] == "scale_rows" and count <= 1  # its own compile, or a disk hit


def test_a_gpu_record_has_resources_and_occupancy(feed):
    """A cuda-target specialisation's record reads registers and shared memory from its
    artifact and computes occupancy at a 256-thread block (no device needed to build it)."""
    from types import SimpleNamespace

    from gpunb.foundation.artifact import ResourceUsage

    kernel = _cell(CELL, 12)["scale_rows"]
    artifact = SimpleNamespace(arch="sm_90", resources=ResourceUsage(
        registers=40, shared_bytes=4096, local_bytes=8))
    spec = SimpleNamespace(artifact=artifact, cache_event=None, compile_ms=12.5)
    event = events.KernelEvent(events.EventKind.SPECIALIZED, "scale_rows",
                               "void(float32[::1], float32[::1], float32)", "cuda", kernel, spec)
    record = panel_feed.kernel_record(event)
    assert (record["registers"], record["shared_bytes"], record["local_bytes"]) == (40, 4096, 8)
    assert 0 < record["occupancy"] <= 1 and record["limiter"] and record["arch"] == "sm_90"
    assert "note" not in record and record["compile_ms"] == 12.5


def test_failed_launches_and_compiles_are_records_until_they_are_gone(feed):
    """A launch that failed before compiling (no signature; the error and its line as `why`),
    then a compile that failed (with the types); once a launch works the compiled record takes
    the compile failure's place and the launch failure is marked gone."""
    from gpunb.foundation.errors import CompileError, LaunchError

    ns = _cell("@cuda.jit\ndef put(v, i):\n    v[i] = undefined_helper(1.0)\n", 9)
    put = ns["put"]
    v = np.zeros(4, np.float32)
    with pytest.raises(LaunchError):
        put[1, 1](v, "0")  # an argument with no kernel type: fails before compiling
    (record,), _ = feed.take()
    assert record["name"] == "put" and record["cache"] == "launch failed"
    assert record["signature"] == "(launch failed before compiling)"
    assert record["why"].startswith("LaunchError: cannot pass argument 2 ('i') to 'put'")
    assert record["problem"] == record["why"] and record["registers"] is None
    assert feed.take() == ([], [])  # sent once; still failing
    with pytest.raises(CompileError):
        put[1, 1](v, 0)
    records = {r["cache"]: r for r in feed.take()[0]}
    # the compile failure (with the launch's types) arrives; the launch failure is not gone:
    # no launch worked yet
    assert set(records) == {"compile failed"}
    assert records["compile failed"]["signature"] == "void(float32[::1], int64)"
    assert "undefined_helper" in records["compile failed"]["why"]
    ns["undefined_helper"] = cuda.jit(device=True)(lambda x: x)
    put[1, 1](v, 0)
    records, _ = feed.take()
    compiled = [r for r in records if r["cache"].startswith(("miss", "hit"))]
    assert len(compiled) == 1 and compiled[0]["id"] == records_id(put, "int64")
    (gone,) = [r for r in records if r["cache"] == "failure gone"]
    assert gone["signature"] == "(launch failed before compiling)"
    assert feed.take() == ([], [])


def records_id(kernel, last: str) -> str:
    code = kernel.py_func.__code__
    return (f"put void(float32[::1], {last}) cpu {code.co_filename}:{code.co_firstlineno}")


def test_profiles_become_records_linked_to_their_cell(feed):
    kernel = _cell(CELL, 13)["scale_rows"]
    panel_feed.cell_ids_by_count[14] = "cell-profiled"
    x = np.arange(256, dtype=np.float32)
    with gpunb.profile():
        for _ in range(3):
            kernel[1, 256](np.zeros_like(x), x, np.float32(2.0))
    _, (profile,) = feed.take(14)
    assert profile["title"] == "Cell In[14]: 3 launches"
    assert profile["cell"] == 14 and profile["cell_id"] == "cell-profiled"
    assert profile["timing"] == "host" and profile["target"] == "cpu"
    (row,) = profile["kernels"]
    assert row["kernel"] == "scale_rows" and row["launches"] == 3 and row["p50_ms"] > 0
    assert row["occupancy"] is None and row["occupancy_note"] == "n/a (CPU target)"
    assert row["defined_at"].startswith("Cell In[13]")


def test_a_profiled_loop_sends_its_last_few_profiles(feed):
    kernel = _cell(CELL, 15)["scale_rows"]
    x = np.arange(32, dtype=np.float32)
    for _ in range(panel_feed.MAX_PROFILES_PER_CELL + 3):
        with gpunb.profile():
            kernel[1, 32](np.zeros_like(x), x, np.float32(2.0))
    assert len(feed.take(16)[1]) == panel_feed.MAX_PROFILES_PER_CELL


def test_a_stopped_feed_hears_nothing(feed):
    feed.stop()
    kernel = _cell(CELL, 17)["scale_rows"]
    x = np.arange(8, dtype=np.float32)
    kernel[1, 8](np.zeros_like(x), x, np.float32(3.0))
    assert feed.take() == ([], [])


def test_a_gpuprofile_cell_reaches_the_comm_as_it_finishes(shell):
    """Through the cell hooks (as in a Jupyter kernel): a %%gpuprofile cell's profile and its
    kernel are published after that cell, the profile linked to the cell that ran it."""
    from nbhelpers import run_cell

    from gpunb.notebook import comm, hooks_for

    hooks_for(shell).start_panel_feed()
    run_cell(shell, "%%gpukernel\ndef add_one(v):\n    i = cuda.grid(1)\n"
                    "    if i < v.size:\n        v[i] += 1.0\n")
    shell.user_ns["np"] = np
    before = len(comm.sent)
    result = run_cell(shell, "%%gpuprofile\nv = np.zeros(64, np.float32)\n"
                             "for _ in range(3):\n    add_one[1, 64](v)")
    assert result.error_in_exec is None
    sent = comm.sent[before:]
    (profile,) = [m["profile"] for m in sent if m["type"] == "profile"]
    assert profile["cell"] == result.execution_count
    assert profile["title"] == f"Cell In[{result.execution_count}]: 3 launches"
    assert profile["kernels"][0]["kernel"] == "add_one"
    kernels = [k for m in sent if m["type"] == "kernels" for k in m["kernels"]]
    assert [k["name"] for k in kernels] == ["add_one"]
    assert comm.snapshot()["profiles"][-1] == profile  # a panel that connects later gets it


@pytest.mark.gpu
def test_a_gpu_kernel_s_record_has_the_driver_s_resources():
    """On the device: the record of a cuda-target specialisation carries the loaded kernel's
    registers and shared memory and its occupancy, made without compiling anything more."""
    started = panel_feed.PanelFeed().start()
    try:
        gpunb.set_target("cuda")
        stages = []
        kernel = _cell(CELL.replace("x[i] * a", "x[i] * a - 3.0"), 21)["scale_rows"]
        x = np.arange(1024, dtype=np.float32)
        out = np.zeros_like(x)
        kernel[4, 256](out, x, np.float32(2.0))
        np.testing.assert_allclose(out, x * 2 - 3)
        with events.subscribe("compile_started", stages.append):
            (record,), _ = started.take()
        assert stages == []
        assert record["target"] == "cuda" and record["registers"] > 0
        assert record["arch"].startswith("sm_") and 0 < record["occupancy"] <= 1
        assert record["limiter"] and "note" not in record
    finally:
        started.stop()
        gpunb.set_target(None)


def test_launch_records_are_built_only_for_a_listening_panel(shell, monkeypatch):
    """A %%gpuprofile cell's launch summary goes to a panel that listens, and is not even
    built without one (a terminal, nbclient, a frontend without the labextension)."""
    from nbhelpers import run_cell
    from test_comm import FakeChannel

    from gpunb.notebook import comm, profile

    built = []
    real = profile.launches_message
    monkeypatch.setattr(profile, "launches_message", lambda p: built.append(1) or real(p))
    monkeypatch.setattr(comm, "_channels", [])
    monkeypatch.setitem(comm._state, "comm", None)
    monkeypatch.setitem(comm._state, "closed", True)
    run_cell(shell, "%%gpukernel\ndef add_two(v):\n    i = cuda.grid(1)\n"
                    "    if i < v.size:\n        v[i] += 2.0\n")
    shell.user_ns["np"] = np
    cell = "%%gpuprofile\nv = np.zeros(64, np.float32)\nfor _ in range(3):\n    add_two[1, 64](v)"
    before = len(comm.sent)
    assert run_cell(shell, cell).error_in_exec is None
    assert built == [] and "launches" not in [m["type"] for m in comm.sent[before:]]
    channel = FakeChannel()
    comm._on_panel_open(channel, {})  # a panel connects
    assert run_cell(shell, cell).error_in_exec is None
    (row,) = [m for m in channel.sent if m["type"] == "launches"][0]["launches"]
    assert (row["kernel"], row["launches"], row["compiling"]) == ("add_two", 3, 0)
    assert 0 < row["min_ms"] <= row["mean_ms"] <= row["max_ms"]


def test_a_profiled_cell_sends_one_summary_per_kernel_however_many_launches(shell, monkeypatch):
    """Records were ~1 KB a launch (20 000 launches: ~19 MB of JSON to the panel); the panel
    gets one row per kernel instead: the payload is bounded by the kernels, not the launches."""
    import json

    from nbhelpers import run_cell
    from test_comm import FakeChannel

    from gpunb.notebook import comm

    monkeypatch.setattr(comm, "_channels", [])
    monkeypatch.setitem(comm._state, "comm", None)
    monkeypatch.setitem(comm._state, "closed", True)
    run_cell(shell, "%%gpukernel\ndef add_one(v):\n    i = cuda.grid(1)\n"
                    "    if i < v.size:\n        v[i] += 1.0\n"
                    "def add_three(v):\n    i = cuda.grid(1)\n"
                    "    if i < v.size:\n        v[i] += 3.0\n")
    shell.user_ns["np"] = np
    channel = FakeChannel()
    comm._on_panel_open(channel, {})
    cell = ("%%gpuprofile\nv = np.zeros(32, np.float32)\nadd_three[1, 32](v)\n"
            "for _ in range(2000):\n    add_one[1, 32](v)")
    assert run_cell(shell, cell).error_in_exec is None
    (message,) = [m for m in channel.sent if m["type"] == "launches"]
    assert len(json.dumps(message)) < 1000
    rows = {r["kernel"]: r for r in message["launches"]}
    assert set(rows) == {"add_one", "add_three"}
    assert (rows["add_one"]["launches"], rows["add_one"]["compiling"]) == (2000, 1)
    assert (rows["add_three"]["launches"], rows["add_three"]["compiling"]) == (1, 1)
    assert rows["add_three"]["mean_ms"] is None  # no launch that did not compile: no timing
    assert 0 < rows["add_one"]["min_ms"] <= rows["add_one"]["mean_ms"] <= rows["add_one"]["max_ms"]


def test_the_launch_summary_keeps_the_busiest_kernels(monkeypatch):
    """However many kernels a cell launched, the message holds at most MAX_LAUNCH_KERNELS rows
    (the most launched) and says how many it left out."""
    from types import SimpleNamespace

    from gpunb.notebook import profile

    launches = [SimpleNamespace(kernel=f"k{i}", time_ms=0.5, compiled=False)
                for i in range(profile.MAX_LAUNCH_KERNELS + 40) for _ in range(1 + (i == 7))]
    message = profile.launches_message(SimpleNamespace(launches=launches))
    rows = message["launches"]
    assert len(rows) == profile.MAX_LAUNCH_KERNELS and message["omitted_kernels"] == 40
    assert rows[0]["kernel"] == "k7" and rows[0]["launches"] == 2
