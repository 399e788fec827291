"""Every teaching notebook in notebooks/ runs headless on the CPU target, start to finish.

Cells tagged `raises-exception` may fail (they show errors on purpose); any other error fails
the test with the cell's traceback. Each notebook is executed once per test session, by
whichever pytest-xdist worker asks first (the other reads its executed copy); the
per-notebook tests then check that what its text promises is what its cells showed. With
GPUNB_NOTEBOOK_ARTIFACTS=DIR the executed copies are written there (CI renders them to HTML).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from nbhelpers import REPO, outputs_text

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
TEACHING = ("01_first_kernels", "02_shared_memory_and_barriers", "03_cache_and_provenance",
            "04_warps_and_cooperative_groups", "05_fuse", "06_memory_coalescing",
            "07_atomics_and_histograms", "08_reductions_and_scans", "09_tiled_matmul",
            "10_profiling_and_debugging", "11_tensor_cores", "12_transfers_and_streams",
            "13_divergence", "14_softmax", "15_attention", "16_convolution", "puzzles")
EXAMPLES = ("dask_cluster",)  # run by test_dask_notebook.py (it starts a local Dask cluster)

_executed: dict = {}


@pytest.fixture(scope="session")
def executed_copies(tmp_path_factory) -> Path:
    """A folder that every pytest-xdist worker of this session shares: a notebook executed by
    one worker is read by the others (they wait on its lock while it runs), not run again."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    folder = root / "executed-teaching-notebooks"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture
def run_notebook(cpu_env, executed_copies):
    """run_notebook(path) -> the notebook, executed once in the session (CPU target)."""
    return lambda path: execute(path, cpu_env, executed_copies)


def execute(path: Path, cpu_env: Path, copies: Path):
    """Run a notebook once per session (each takes a kernel start and a few compiles), by the
    first worker that asks; every test then reads the executed copy that worker wrote."""
    if path.name in _executed:
        return _executed[path.name]
    import nbformat
    from filelock import FileLock
    from nbclient import NotebookClient

    done = copies / path.name
    with FileLock(f"{done}.lock"):
        if not done.exists():
            nb = nbformat.read(path, as_version=4)
            client = NotebookClient(nb, timeout=300, kernel_name="python3",
                                    store_widget_state=True,
                                    resources={"metadata": {"path": str(cpu_env)}})
            client.execute()
            partial = done.with_suffix(".partial")
            nbformat.write(nb, partial)
            partial.replace(done)
            keep = os.environ.get("GPUNB_NOTEBOOK_ARTIFACTS")
            if keep:  # CI renders the executed copies to HTML (.ci/run)
                Path(keep).mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, Path(keep) / path.name)
    _executed[path.name] = nbformat.read(done, as_version=4)
    return _executed[path.name]


def test_every_teaching_notebook_is_there():
    assert [p.stem for p in NOTEBOOKS] == sorted(TEACHING + EXAMPLES)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"]


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem in TEACHING],
                         ids=[p.name for p in NOTEBOOKS if p.stem in TEACHING])
def test_notebook_runs(path, run_notebook):
    nb = run_notebook(path)
    expected = [c for c in nb.cells if "raises-exception" in c.get("metadata", {}).get("tags", [])]
    for cell in expected:
        errors = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
        assert errors, "a cell tagged raises-exception did not fail"
        text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[0]["traceback"]))
        assert "Cell In[" in text


def _code_outputs(nb) -> list[str]:
    plain = re.compile(r"\x1b\[[0-9;]*m")
    return [plain.sub("", outputs_text(c)) for c in nb.cells if c.cell_type == "code"]


def _error_text(nb, needle: str) -> str:
    """The traceback of the (expected) failing cell whose source contains `needle`."""
    cell = next(c for c in nb.cells if c.cell_type == "code" and needle in c.source)
    errors = [o for o in cell.outputs if o["output_type"] == "error"]
    assert errors, f"the cell with {needle!r} did not fail"
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[0]["traceback"]))


def _notebook(name):
    return REPO / "notebooks" / f"{name}.ipynb"


def test_02_divergent_barrier_and_bounds_errors_name_the_lines(run_notebook):
    nb = run_notebook(_notebook("02_shared_memory_and_barriers"))
    text = _error_text(nb, "def divergent")
    assert "threads of one block wait at different barriers" in text
    assert re.search(r"line 6 and cuda.syncthreads at line 9", text)
    assert re.search(r"Cell In\[\d+\], line 6", text) and "^" in text and "hint:" in text
    text = _error_text(nb, "def shift_left")
    assert "index 63 is out of bounds for 'buf' with extent 63" in text
    outputs = "\n".join(_code_outputs(nb))
    assert "static shared memory per block: 2048 bytes" in outputs
    assert "▶ 256" in outputs  # the explorer marks the block size the kernel is written for
    # coalescing comes first: x on the row needs 16 sectors per store, x on the column 4
    row = outputs[outputs.index("matmul_x_is_row\n"):outputs.index("matmul_x_is_col\n")]
    assert "write C: 16.0 sectors per warp request (4 if" in row
    col = outputs[outputs.index("matmul_x_is_col\n"):]
    assert "write C:  4.0 sectors per warp request (4 if" in col
    assert "global: read A 100%, read B 100%, write C 100%" in outputs
    assert "shared memory bank conflicts: 0" in outputs


def test_03_provenance_says_which_cell_changed_and_a_reformat_is_a_hit(run_notebook):
    nb = run_notebook(_notebook("03_cache_and_provenance"))
    outputs = "\n".join(_code_outputs(nb))
    assert "miss (new)" in outputs
    assert "miss (changed: relu)" in outputs
    assert re.search(r"why: changed: device function `relu` defined at Cell In\[\d+\], line 2",
                     outputs)
    assert "kept after a re-check: hit (memory, re-checked)" in outputs
    assert re.search(r"^hit \(memory\), key ", outputs, re.M)
    assert "miss (changed: SLOPE)" in outputs
    assert "why: changed: global `SLOPE`" in outputs and "0.01 -> 0.2" in outputs
    assert "another process: hit (disk)" in outputs


def test_04_warp_and_grid_results_are_shown(run_notebook):
    nb = run_notebook(_notebook("04_warps_and_cooperative_groups"))
    outputs = "\n".join(_code_outputs(nb))
    assert "warp sums: [ 496. 1520. 2544. 3568.]" in outputs
    assert "shfl.sync.bfly" in outputs and "shfl.sync.idx" in outputs
    assert "sum of the result = 1.000000" in outputs


def test_05_fuse_shows_generated_source_and_two_launches_for_a_reduction(run_notebook):
    nb = run_notebook(_notebook("05_fuse"))
    outputs = "\n".join(_code_outputs(nb))
    assert "def leaky_relu(out, a0" in outputs
    assert "global loads: 1   global stores: 1" in outputs
    assert re.search(r"\('dot_plus_n', \d+, \d+\), \('dot_plus_n_finish', 1, \d+\)", outputs)
    assert "np.sort is not supported" in _error_text(nb, "np.sort")


def test_08_reductions_and_scans_match_numpy(run_notebook):
    nb = run_notebook(_notebook("08_reductions_and_scans"))
    outputs = "\n".join(_code_outputs(nb))
    assert "target: cpu   N = 65536" in outputs
    assert "sum_shared matches numpy (256 blocks)" in outputs
    assert "sum_shuffle matches numpy (16 blocks)" in outputs
    assert "shfl.sync.down: 10   bar.sync: 1   atomics: ['atom.global.add.f32']" in outputs
    assert "shared bytes: sum_shared 1024  sum_shuffle 32" in outputs
    assert "scan of 65536 int32 matches np.cumsum exactly" in outputs
    assert "ragged lengths 1, 31, 257, 1000 match too" in outputs


def test_09_each_matmul_step_matches_numpy_and_the_last_keeps_acc_in_registers(run_notebook):
    nb = run_notebook(_notebook("09_tiled_matmul"))
    outputs = "\n".join(_code_outputs(nb))
    for step in ("naive", "shared tiles", "register tiles"):
        assert f"{step}: matches numpy" in outputs
    assert "matmul_tiled: 32 registers/thread, 2048 bytes of shared memory/block" in outputs
    assert re.search(r"matmul_registers: \d+ registers/thread, 8192 bytes of shared "
                     r"memory/block, 0 bytes local", outputs)
    assert "fma.rn.f32: 64   ld.shared: 16   ld.local: 0" in outputs
    # the register tile's layout: coalesced global accesses, no bank conflicts
    assert "global accesses: read A 100%, read B 100%, write C 100%" in outputs
    assert "shared-memory bank conflicts: 0" in outputs
    for kernel in ("matmul_naive", "matmul_tiled", "matmul_registers"):  # %%gpuprofile tables
        assert re.search(rf"^{kernel} +2 +1 ", outputs, re.M), kernel


def test_06_access_maps_show_strided_reads_and_bank_conflicts(run_notebook):
    nb = run_notebook(_notebook("06_memory_coalescing"))
    outputs = "\n".join(_code_outputs(nb))
    assert "stride  1:  4.0 sectors per warp read, 100% of the bytes moved are used" in outputs
    assert "stride  8: 32.0 sectors per warp read,  12% of the bytes moved are used" in outputs
    assert "first reader of each element of x: [ 0 -1  1 -1  2 -1" in outputs
    naive = outputs[outputs.index("transpose_naive\n"):outputs.index("transpose_tiled\n")]
    assert re.search(r"read  a:  4.0 sectors/request, 100% efficient", naive)
    assert re.search(r"write out: 32.0 sectors/request,  12% efficient", naive)
    assert "read  tile (shared): 3968 bank conflicts, worst 32-way" in outputs
    assert re.search(r"transpose_padded line \d+ read  tile: 0 bank conflicts", outputs)
    assert "all three transposes are correct" in outputs


def test_07_race_detector_finds_the_non_atomic_histogram(run_notebook):
    nb = run_notebook(_notebook("07_atomics_and_histograms"))
    text = _error_text(nb, "def histogram_racy")
    assert "RaceError" in text and "data race on counts[" in text
    assert "counts[values[i]] += 1" in text and "^" in text and "cuda.atomic" in text
    outputs = "\n".join(_code_outputs(nb))
    assert re.search(r"race on counts \(\d+,\)\n  (read|write) at line 5 by thread", outputs)
    assert "histogram_atomic: no race, counts match np.bincount" in outputs
    assert "histogram_private: no race, counts match np.bincount" in outputs
    assert "max_abs: 1000  numpy: 1000" in outputs and "max_abs_cas: 1000  numpy: 1000" in outputs


def test_puzzles_notebook_walks_through_every_puzzle_with_its_starter(run_notebook):
    from gpunb import puzzles

    nb = run_notebook(_notebook("puzzles"))
    outputs = "\n".join(_code_outputs(nb))
    markdown = "\n".join(o.get("data", {}).get("text/markdown", "") for c in nb.cells
                         if c.cell_type == "code" for o in c.outputs)
    assert "| 1 | `map` | Map | indexing |" in markdown  # the list, as a table
    assert "### Puzzle `matmul`: Tiled matmul" in markdown
    # the worked example: the statement's sizes, then two hidden ones drawn for this attempt
    assert re.search(r"✔ puzzle 'map' passed \(sizes 4, 7, 1, \d+, \d+\)", outputs)
    assert "map at size 4, launch [1, 4]: what each thread read and wrote" in outputs  # show()
    names = list(puzzles.list())
    for name in names:  # every starter is there, as shipped it fails with feedback
        assert f"✘ puzzle '{name}' failed" in outputs, name
        assert f"Puzzle '{name}': " in outputs, name
    assert outputs.count("never written") >= len(names) - 4  # outputs that start at 0 or -1


def test_10_profile_roofline_bounds_check_race_and_sanitizer_message(run_notebook):
    nb = run_notebook(_notebook("10_profiling_and_debugging"))
    outputs = "\n".join(_code_outputs(nb))
    assert "gpunb profile: 10 launches; host timings (CPU target)" in outputs
    assert re.search(r"^saxpy +5 +0 ", outputs, re.M) and re.search(r"^poly +5 +0 ", outputs, re.M)
    assert 'class="gpunb-roofline"' in outputs  # the roofline, drawn in the profile's HTML
    assert "saxpy  bytes     786432  flops     131072  intensity 0.17 flop/byte" in outputs
    assert "poly   bytes     524288  flops    1048576  intensity 2.00 flop/byte" in outputs
    assert len(re.findall(r"^block +\d+: +[\d.]+ ms", outputs, re.M)) == 6
    text = _error_text(nb, "def shift_left")
    assert "index 64 is out of bounds for 'x' with extent 64 (thread (63, 0, 0)" in text
    text = _error_text(nb, "def block_sum_racy")
    assert "data race on buf[" in text and "(shared memory)" in text
    # the debugger: post-mortem of the off-by-one, a --break stop in the race, a trace
    assert "'shift_left' stopped at an error: thread (63, 0, 0) of block (0, 0, 0), line 4" \
        in outputs
    assert "   i: int64 = 63" in outputs and "failed - KernelIndexError" in outputs
    assert "'block_sum_racy' stopped at a breakpoint: thread (0, 0, 0)" in outputs
    assert "buf [0. 0. 0. 0. 0. 0. 0. 0.] ..." in outputs
    assert "threads 1-63: {'not started'}" in outputs
    assert "total: 0.0  expected: 2016.0" in outputs
    assert "threads 1-63: {'at line 6 (waits for its turn)'}" in outputs  # past the barrier
    assert "buf: [0. 1. 2. 3. 4. 5. 6. 7.] ..." in outputs
    assert "total: 2016.0  expected: 2016.0" in outputs
    assert "<gpunb trace of 'block_sum_traced': 17 steps of 1 thread(s)>" in outputs
    assert "line 9: s = 0.0\nline 10: s = 0.0\nline 9: s = 1.0\nline 10: s = 1.0\n" \
           "line 9: s = 3.0" in outputs
    widgets = [c for c in nb.cells if "gpunb-debugger" in json.dumps(
        nb.metadata.get("widgets", {}))]
    assert widgets, "the debugger widgets were not saved"
    assert "compute-sanitizer racecheck: compute-sanitizer checks GPU launches" in outputs


def test_11_tensor_cores_each_step_matches_numpy_and_shows_the_layouts(run_notebook):
    nb = run_notebook(_notebook("11_tensor_cores"))
    outputs = "\n".join(_code_outputs(nb))
    assert "one tile matches numpy: True" in outputs
    assert "mma.sync matches numpy: True" in outputs
    for step in ("wmma, global", "wmma, shared pipeline", "mma.sync + ldmatrix + cp.async"):
        assert f"{step}: matches numpy" in outputs, step
    assert "wmma.mma: 16   wmma.load (shared): 12   cp.async: 12" in outputs
    assert "mma.sync: 64   ldmatrix: 16   ld.local: 0" in outputs
    html = "\n".join(o.get("data", {}).get("text/html", "") for c in nb.cells
                     if c.cell_type == "code" for o in c.outputs)
    assert "mma.sync m16n8k16, float16" in html and "ldmatrix .x4 .trans" in html
    for kernel in ("wmma_simple", "wmma_gemm", "mma_gemm"):  # %%gpuprofile tables
        assert re.search(rf"^{kernel} +2 +1 ", outputs, re.M), kernel


def test_11_tma_wgmma_step_runs_checks_and_inspects_for_sm_90a(run_notebook):
    nb = run_notebook(_notebook("11_tensor_cores"))
    outputs = "\n".join(_code_outputs(nb))
    for step in ("TMA + wgmma, one consumer", "TMA + wgmma, hopper_gemm"):
        assert f"{step}: matches numpy" in outputs, step
    assert outputs.count("box (64, 64), swizzle 128") >= 2  # A's and B's descriptors
    assert "PTX   wgmma.mma_async: 4   cp.async.bulk.tensor: 2   mbarrier.try_wait: 2" in outputs
    if "SASS " in outputs:  # ptxas and nvdisasm installed
        assert "'HGMMA.64x64x16.F32': 4" in outputs and "'UTMALDG.2D': 2" in outputs
    assert "[runs on cpu; PTX for sm_90a]" in outputs  # the inspector's report
    assert "racecheck: no race, no missing fence; matches numpy: True" in outputs
    # %%gpuprofile tables: two launches each (hopper_gemm compiles before its first launch,
    # when launch() asks the kernel how many clusters fit: no launch compiles there)
    for kernel, compiling in (("tma_wgmma_gemm", 1), ("gemm", 0)):
        assert re.search(rf"^{kernel} +2 +{compiling} ", outputs, re.M), kernel
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    # the H100 figures are shown as recorded, with their date and device
    assert "Measured on an H100** (NVIDIA H100 80GB HBM3, 2026-11-28" in markdown
    assert "| 604 | 642 | 719 / 789 | 84 % / 81 % |" in markdown


def test_12_the_pipeline_over_streams_matches_the_serial_run(run_notebook):
    nb = run_notebook(_notebook("12_transfers_and_streams"))
    outputs = "\n".join(_code_outputs(nb))
    assert "host to device, pinned" in outputs and "device to host, pageable" in outputs
    assert re.search(r"serial: copy in, kernel, copy out +[\d.]+ ms .*the result matches numpy",
                     outputs)
    assert re.search(r"pipelined over 4 streams +[\d.]+ ms .*the result matches numpy", outputs)


def test_13_divergence_shows_the_lanes_of_each_side_and_a_select(run_notebook):
    nb = run_notebook(_notebook("13_divergence"))
    outputs = "\n".join(_code_outputs(nb))
    assert "lane 0 ran with 0x55555555   lane 1 ran with 0xaaaaaaaa" in outputs
    assert re.search(r"^by_lane +[\d.]+ ms", outputs, re.M)
    assert re.search(r"^by_value, sorted data +[\d.]+ ms", outputs, re.M)
    selects = re.search(r"selp: (\d+)   branches \(bra\): (\d+)", outputs)
    assert int(selects.group(1)) >= 1 and int(selects.group(2)) == 1


def test_14_both_softmax_kernels_match_numpy_and_overflow_is_shown(run_notebook):
    nb = run_notebook(_notebook("14_softmax"))
    outputs = "\n".join(_code_outputs(nb))
    assert "exp(x) / sum(exp(x))          : [ 0.  0. nan]" in outputs
    assert "softmax_3pass   matches numpy; reads the row 3 times" in outputs
    assert "softmax_online  matches numpy; reads the row 2 times" in outputs


def test_15_fused_attention_matches_numpy_without_the_scores_matrix(run_notebook):
    nb = run_notebook(_notebook("15_attention"))
    outputs = "\n".join(_code_outputs(nb))
    assert "three kernels: match numpy" in outputs
    assert "fused: matches numpy; " in outputs and "no seq x seq matrix in memory" in outputs


def test_16_the_tiled_convolution_reads_each_pixel_about_once(run_notebook):
    nb = run_notebook(_notebook("16_convolution"))
    outputs = "\n".join(_code_outputs(nb))
    direct = re.search(r"conv_direct +global reads per output pixel: +([\d.]+)", outputs)
    tiled = re.search(r"conv_tiled +global reads per output pixel: +([\d.]+)", outputs)
    assert float(direct.group(1)) > 20 and float(tiled.group(1)) < 2
    assert re.search(r"conv_tiled +matches numpy", outputs)


LESSONS = [p.stem for p in NOTEBOOKS if p.stem[:2].isdigit()]


@pytest.mark.parametrize("name", LESSONS)
def test_each_notebook_ends_with_its_graded_exercises_failing_as_shipped(name, run_notebook):
    from gpunb import puzzles

    nb = run_notebook(_notebook(name))
    lesson = name[:2]
    names = list(puzzles.exercises(lesson)) or list(puzzles.list(lesson))
    assert 2 <= len(names) <= 3
    outputs = "\n".join(_code_outputs(nb))
    for exercise in names:
        assert f"Puzzle '{exercise}': " in outputs, exercise
        assert f"✘ puzzle '{exercise}' failed" in outputs, exercise
    headings = [c.source.splitlines()[0] for c in nb.cells
                if c.cell_type == "markdown" and c.source.startswith("## ")]
    assert headings[-1] == "## Exercises", headings


FIGURES = ("06", "07", "08", "09", "12", "13", "14", "15", "16")


@pytest.mark.parametrize("name", [n for n in LESSONS if n[:2] in FIGURES])
def test_performance_notebooks_show_the_h100_table_or_say_there_is_none(name, run_notebook):
    from gpunb.notebook import figures

    nb = run_notebook(_notebook(name))
    markdown = "\n".join(o.get("data", {}).get("text/markdown", "") for c in nb.cells
                         if c.cell_type == "code" for o in c.outputs)
    table = figures.table(name[:2], figures.REPO_FILE)
    if table.entry:
        assert f"Measured on {table.entry['device']} on {table.entry['date']}" in markdown
        assert "| kernel | time (ms) | figure | vs reference | note |" in markdown
    else:
        assert f"No H100 figures have been recorded for notebook {name[:2]} yet" in markdown
