"""gpunb.puzzles: every reference solution passes (at random inputs and hidden sizes, every
attempt), every starter and typical wrong answers fail with feedback that says what is wrong
(which size, the first wrong elements and who wrote them, which rule, a hint) - never the whole
expected output. The full corpus of wrong submissions is test_wrong_submissions.py."""

from __future__ import annotations

import re

import numpy as np
import pytest
import solutions

from gpunb import cuda, float32, puzzles
from gpunb.puzzles.feedback import SHOWN_ELEMENTS, compare

NAMES = list(puzzles.list())

# one module, several puzzle constants: the wrong answers below read these
TPB = 4


def test_there_are_at_least_twenty_puzzles_in_the_issue_s_topics():
    assert len(NAMES) >= 20 and len(set(NAMES)) == len(NAMES)
    for topic in ("map", "zip", "guards", "map_2d", "broadcast", "blocks", "blocks_2d", "shared",
                  "pooling", "dot", "conv1d", "prefix_sum", "axis_sum", "matmul", "histogram",
                  "transpose"):
        assert topic in NAMES


def test_every_puzzle_has_a_reference_solution_in_the_tests():
    assert sorted(solutions.SOLUTIONS) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_reference_solution_passes(name):
    grade = puzzles.check(name, solutions.SOLUTIONS[name])  # a fresh seed every run
    assert grade.passed, repr(grade)
    puzzle = puzzles.get(name)
    assert grade.sizes_passed[:len(puzzle.sizes)] == list(puzzle.sizes)
    assert len(grade.sizes_passed) == len(puzzle.sizes) + (2 if puzzle.hidden else 0)
    assert repr(grade).startswith(f"✔ puzzle '{name}' passed")


@pytest.mark.parametrize("name", NAMES)
def test_starter_compiles_and_fails_with_feedback(name):
    puzzle = puzzles.get(name)
    namespace = {"cuda": cuda}
    exec(compile(puzzle.starter, f"<starter {name}>", "exec"), namespace)
    kernel = namespace[f"{name}_kernel"]
    assert tuple(puzzle.params) == tuple(kernel.__code__.co_varnames[:kernel.__code__.co_argcount])
    grade = puzzles.check(name, kernel)
    assert not grade.passed
    text = repr(grade)
    assert text.startswith(f"✘ puzzle '{name}' failed")
    assert "never written" in text or "shared memory" in text or "expected" in text, text


@pytest.mark.parametrize("name", NAMES)
def test_statement_shows_launch_limits_and_starter(name):
    puzzle = puzzles.get(name)
    text = repr(puzzle)
    assert text.startswith(f"Puzzle '{name}'") and "launch: " in text
    assert "shared memory: " in text and puzzle.starter.splitlines()[0] in text
    assert "inputs drawn at random at every attempt" in text
    if puzzle.hidden is not None:
        assert "and 2 hidden sizes drawn at every attempt" in text
    for line in puzzle.rules.describe(puzzle.sizes[0]):
        assert f"method: {line}" in text
    markdown = puzzle._repr_markdown_()
    assert "```python\n%%gpukernel\n" in markdown and f"`{name}`" in markdown


@pytest.mark.parametrize("name", [n for n in NAMES if puzzles.get(n).constants])
def test_starter_constants_are_the_ones_the_puzzle_launches_with(name):
    puzzle = puzzles.get(name)
    for constant, value in puzzle.constants.items():
        assert f"{constant} = {value}\n" in puzzle.starter


def test_list_is_a_table_in_a_notebook():
    table = puzzles.list()._repr_markdown_()
    assert "| 1 | `map` | Map | indexing |" in table
    assert len(table.splitlines()) == len(NAMES) + 2


def test_unknown_name_suggests_the_closest():
    with pytest.raises(LookupError, match="no puzzle called 'histgram'; did you mean 'histogram'"):
        puzzles.get("histgram")


# ---- typical wrong answers ------------------------------------------------------------------


def test_unwritten_elements_are_named_with_expected_and_got():
    def map_kernel(out, a):
        i = cuda.threadIdx.x
        if i < 2:
            out[i] = a[i] + 10

    text = repr(puzzles.check("map", map_kernel))
    assert "at size 4 (launch [1, 4])" in text
    assert "'out' is wrong at 2 of 4 elements" in text
    assert re.search(r"out\[2\]: expected -?\d+\.0, got nan \(never written\)", text)
    assert "hint: some elements were never written" in text
    assert "expected out:" not in text  # never the whole expected output
    assert "global reads per thread:  [1 1 0 0]" in text
    assert "out: thread that wrote each element last (-1: none):\n    [ 0  1 -1 -1]" in text


def test_a_failure_shows_the_access_map_in_a_notebook():
    def map_kernel(out, a):
        i = cuda.threadIdx.x
        if i > 0:
            out[i] = a[i - 1] + 10

    grade = puzzles.check("map", map_kernel)
    assert grade.access is not None and grade.access["out"].last_writer.tolist() == [-1, 1, 2, 3]
    html = grade._repr_html_()
    assert html.startswith('<pre style="color:#cf222e">✘ puzzle') and "access map" in html


def test_a_missing_guard_is_an_out_of_bounds_message_not_a_crash():
    def guards_kernel(out, a, size):
        i = cuda.threadIdx.x
        out[i] = a[i] + 10

    text = repr(puzzles.check("guards", guards_kernel))
    assert "at size 4 (launch [1, 8]) the kernel failed" in text
    assert "index 4 is out of bounds for 'a' with extent 4" in text
    assert "out[i] = a[i] + 10" in text and "^" in text


def test_forgetting_the_block_offset_leaves_later_blocks_unwritten():
    def blocks_kernel(out, a, size):
        i = cuda.threadIdx.x
        if i < size:
            out[i] = a[i] + 10

    grade = puzzles.check("blocks", blocks_kernel)
    text = repr(grade)
    assert grade.kinds[:2] == ["race", "values"]  # three blocks write out[0]: first, the race
    assert "at size 9 (launch [3, 4])" in text and "wrong at 5 of 9 elements" in text
    assert "out[4]: expected" in text and "(never written)" in text
    assert "data race on out[" in text and "nothing orders blocks" in text


def test_swapped_2d_indices_show_index_pairs():
    def broadcast_kernel(out, a, b, size):
        x = cuda.threadIdx.x
        y = cuda.threadIdx.y
        if x < size and y < size:
            out[x, y] = a[y, 0] + b[0, x]

    text = repr(puzzles.check("broadcast", broadcast_kernel))
    assert re.search(r"out\[0, 1\]: expected -?\d+\.0, got -?\d+\.0", text)


def test_shared_memory_where_the_puzzle_forbids_it():
    def map_kernel(out, a):
        buf = cuda.shared.array(TPB, float32)
        i = cuda.threadIdx.x
        buf[i] = a[i]
        out[i] = buf[i] + 10

    text = repr(puzzles.check("map", map_kernel))
    assert "uses shared memory (cuda.shared.array); puzzle 'map' is solved without it" in text


def test_no_shared_memory_where_the_puzzle_is_about_it():
    text = repr(puzzles.check("shared", solutions.blocks_kernel))
    assert "puzzle 'shared' is about shared memory, and the kernel uses none" in text


def test_wrong_number_of_parameters_points_to_the_starter():
    def zip_kernel(out, a):
        out[cuda.threadIdx.x] = a[cuda.threadIdx.x]

    text = repr(puzzles.check("zip", zip_kernel))
    assert "the kernel takes 2 arguments (out, a) but puzzle 'zip' passes 3: (out, a, b)" in text
    assert "gpunb.puzzles.get('zip').starter" in text


def test_a_compile_error_is_shown_with_its_line():
    def map_kernel(out, a):
        i = cuda.threadIdx.x
        out[i] = a[i] + undefined_name  # noqa: F821

    text = repr(puzzles.check("map", map_kernel))
    assert "undefined_name" in text and "^" in text


def test_changing_an_input_is_reported():
    def map_kernel(out, a):
        i = cuda.threadIdx.x
        a[i] += 10
        out[i] = a[i]

    assert "the kernel changed the input 'a'" in repr(puzzles.check("map", map_kernel))


def _ignores_its_input(out, a):
    i = cuda.threadIdx.x
    out[i] = a[i] * 0


@pytest.mark.parametrize("module, name, replacement", [
    ("grading", "compare", lambda *args, **kwargs: None),      # finds no wrong value
    ("rules", "method", lambda *args, **kwargs: []),            # breaks no rule
    ("grading", "Grade.__bool__", lambda self: True),           # every grade passes
])
def test_a_cell_that_replaces_part_of_the_grader_gets_no_grade(monkeypatch, module, name,
                                                                replacement):
    # found by hunt-prog: `gpunb.puzzles.grading.compare = lambda *a, **k: None` in a cell made
    # a kernel that computes nothing pass
    import importlib

    target = importlib.import_module(f"gpunb.puzzles.{module}")
    owner, _, attribute = name.rpartition(".")
    monkeypatch.setattr(getattr(target, owner) if owner else target, attribute, replacement)
    grade = puzzles.check("map", _ignores_its_input)
    assert grade.kinds == ["grader_changed"] and not grade.passed
    assert f"gpunb.puzzles.{module}.{name} replaced" in repr(grade)
    assert "restart the kernel" in grade.hint


def test_an_altered_puzzle_gets_no_grade():
    puzzle = puzzles.get("map")  # frozen, but object.__setattr__ gets past that
    original = puzzle.reference
    object.__setattr__(puzzle, "reference", lambda args: {"out": args["a"] * 0})
    try:
        assert "puzzle 'map'" in repr(puzzles.check("map", _ignores_its_input))
    finally:
        object.__setattr__(puzzle, "reference", original)
    assert puzzles.check("map", _ignores_its_input).kinds == ["values"]  # graded again


def test_a_ragged_size_catches_a_reduction_that_assumes_full_blocks():
    def block_sum_kernel(out, a, size):
        cache = cuda.shared.array(8, float32)
        i = cuda.grid(1)
        local_i = cuda.threadIdx.x
        cache[local_i] = a[i]
        cuda.syncthreads()
        step = 1
        while step < 8:
            if local_i % (2 * step) == 0:
                cache[local_i] += cache[local_i + step]
            step *= 2
            cuda.syncthreads()
        if local_i == 0:
            out[cuda.blockIdx.x] = cache[0]

    grade = puzzles.check("block_sum", block_sum_kernel)
    assert grade.sizes_passed == [8] and not grade.passed
    assert "at size 15 (launch [2, 8]) the kernel failed" in repr(grade)
    assert "index 15 is out of bounds for 'a' with extent 15" in repr(grade)


def test_a_non_atomic_histogram_is_a_data_race():
    def histogram_kernel(out, a, size):
        i = cuda.grid(1)
        if i < size:
            out[a[i]] += 1

    text = repr(puzzles.check("histogram", histogram_kernel))
    assert "data race" in text and "cuda.atomic" in text


def test_a_missing_barrier_is_a_data_race_on_shared_memory():
    def dot_kernel(out, a, b, size):
        shared = cuda.shared.array(8, float32)
        i = cuda.grid(1)
        local_i = cuda.threadIdx.x
        shared[local_i] = a[i] * b[i] if i < size else 0.0
        if local_i == 0:
            total = float32(0.0)
            for k in range(8):
                total += shared[k]
            out[0] = total

    text = repr(puzzles.check("dot", dot_kernel))
    assert "data race" in text and "shared" in text and "cuda.syncthreads()" in text


def test_reading_neighbours_from_global_memory_breaks_the_read_limit():
    def pooling_kernel(out, a, size):
        shared = cuda.shared.array(8, float32)
        i = cuda.grid(1)
        if i < size:
            shared[i] = a[i]
            total = a[i]
            if i >= 1:
                total += a[i - 1]
            if i >= 2:
                total += a[i - 2]
            out[i] = total

    text = repr(puzzles.check("pooling", pooling_kernel))
    assert re.search(r"thread 2 \(threadIdx \(2, 0, 0\), blockIdx \(0, 0, 0\)\) made 4 global "
                     r"reads; puzzle 'pooling' allows at most 1 per thread \(8 threads are over\)",
                     text), text
    assert "hint: read each value once into shared memory" in text


def test_other_correct_solutions_pass_too():
    assert puzzles.check("prefix_sum", solutions.prefix_sum_shuffle_kernel)
    assert puzzles.check("transpose", solutions.transpose_simple_kernel)


def test_a_jit_kernel_for_another_target_is_graded_on_the_cpu():
    kernel = cuda.jit(solutions.reverse_kernel, target="cuda")
    assert puzzles.check("reverse", kernel)


def test_compare_with_tolerance_and_shapes():
    assert compare("out", np.ones(3, np.float32), np.ones(3, np.float32) * (1 + 1e-7),
                   1e-6) is None
    assert "has shape (2,), expected (3,)" in compare("out", np.ones(3), np.ones(2)).message
    many = compare("out", np.zeros(20, np.float32), np.ones(20, np.float32)).message
    assert "wrong at 20 of 20 elements" in many and f"... and {20 - SHOWN_ELEMENTS} more" in many
    assert many.count("expected") == SHOWN_ELEMENTS


def test_compare_names_the_pattern_of_the_wrong_values():
    expected = np.arange(10, dtype=np.float32)
    shifted = np.r_[np.float32(7), expected[:-1]]
    assert "one place off" in compare("out", expected, shifted).hint
    edge = expected.copy()
    edge[-1] = 0
    assert "near the end" in compare("out", expected, edge).hint
    unset = expected.copy()
    unset[3] = np.nan
    assert "never written" in compare("out", expected, unset).hint
    noise = expected[::-1].copy()
    assert "redo its arithmetic" in compare("out", expected, noise).hint


# ---- attempts: random inputs, hidden sizes, seeds ---------------------------------------------


def test_each_attempt_draws_new_inputs_and_a_seed_repeats_one():
    def map_kernel(out, a):
        i = cuda.threadIdx.x
        out[i] = 10.0                    # ignores a: right only if a is all zeros

    first, second = puzzles.check("map", map_kernel), puzzles.check("map", map_kernel)
    assert first.seed != second.seed and repr(first) != repr(second)
    again = puzzles.check("map", map_kernel, seed=first.seed)
    assert repr(again) == repr(first)
    assert f"puzzles.check('map', kernel, seed={first.seed}) repeats this attempt" in repr(first)
    assert "unread_input" in first.kinds


def test_a_hidden_size_catches_a_kernel_fitted_to_the_shown_sizes():
    def blocks_kernel(out, a, size):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if i < size and i < 16:           # enough for the sizes the statement shows (max 13)
            out[i] = a[i] + 10

    # a seed whose first hidden size is over 16 (the grader draws hidden sizes first)
    seed = next(s for s in range(1000) if puzzles.get("blocks").hidden(
        np.random.default_rng(s)) > 16)
    grade = puzzles.check("blocks", blocks_kernel, seed=seed)
    assert not grade and grade.hidden and grade.size > 16
    assert grade.sizes_passed == [9, 4, 13]
    assert f"at hidden size {grade.size} (launch" in repr(grade)
    assert "never written" in repr(grade)


def test_a_kernel_that_bakes_in_a_known_seeds_answers_does_not_pass():
    # found by hunt-prog: with seed= the inputs are known in advance, so a kernel holding the
    # expected outputs of that seed (and computing nothing) passed
    from gpunb.puzzles.model import HIDDEN_SIZES

    puzzle = puzzles.get("map")
    def draw(seed):  # the grader's draws, in its order: the hidden sizes first
        rng = np.random.default_rng(seed)
        return [*puzzle.sizes, *(puzzle.hidden(rng) for _ in range(HIDDEN_SIZES))], rng

    seed = next(s for s in range(1000) if len(set(draw(s)[0])) == 3 + HIDDEN_SIZES)
    sizes, rng = draw(seed)
    answers = np.zeros(64 * 64, np.float32)
    for size in sizes:
        answers[size * 64:size * 64 + size] = puzzle.reference(puzzle.inputs(size, rng))["out"]

    def map_kernel(out, a):
        i = cuda.threadIdx.x
        out[i] = answers[out.size * 64 + i] + a[i] * 0

    grade = puzzles.check("map", map_kernel, seed=seed)
    assert not grade and grade.seed != seed and grade.kinds == ["values"]
    assert f"it passed with seed={seed}, but a pass must also hold on inputs drawn afresh" \
        in repr(grade)
    assert puzzles.check("map", solutions.SOLUTIONS["map"], seed=seed)  # a right one passes


def test_feedback_never_shows_the_whole_expected_output():
    def blocks_2d_kernel(out, a, size):
        pass

    grade = puzzles.check("blocks_2d", blocks_2d_kernel)
    text = repr(grade)
    assert text.count(": expected ") == SHOWN_ELEMENTS
    assert f"... and {grade.size ** 2 - SHOWN_ELEMENTS} more" in text


def test_a_wrong_element_names_the_thread_that_wrote_it_and_what_it_read():
    def reverse_kernel(out, a, size):
        i = cuda.grid(1)
        if i < size:
            out[i] = a[i]

    text = repr(puzzles.check("reverse", reverse_kernel, seed=3))
    assert re.search(r"out\[0\]: expected -?\d+\.0, got -?\d+\.0; written by thread "
                     r"\(0, 0, 0\) of block \(0, 0, 0\), which read a\[0\]", text), text


# ---- the show view and hints ------------------------------------------------------------------


def test_show_lists_each_threads_reads_and_writes_shared_memory_included():
    view = puzzles.show("dot", solutions.dot_kernel, size=5)
    text = repr(view)
    assert text.startswith("dot at size 5, launch [1, 8]: what each thread read and wrote")
    assert "thread (1, 0, 0): read a[1], read b[1], wrote shared[1] (shared)" in text
    assert "thread (0, 0, 0): read a[0], read b[0], wrote shared[0] (shared), read shared[0]" \
        in text and "wrote out[0]" in text
    html = view._repr_html_()
    assert html.count("<svg") == 1 and "shared (shared memory)" in html
    assert html.count("<line") >= 5 + 5 + 8  # a, b -> shared for 5 threads; 8 slots -> out


def test_show_draws_one_diagram_per_block_and_reports_a_failing_kernel():
    view = puzzles.show("blocks", solutions.blocks_kernel, size=9)
    assert view._repr_html_().count("<svg") == 3 and "block 2:" in repr(view)

    def broken(out, a, size):
        out[cuda.grid(1)] = a[cuda.grid(1)]

    text = repr(puzzles.show("blocks", broken, size=9))
    assert "the kernel failed" in text and "out of bounds" in text


def test_hints_come_one_level_at_a_time():
    first = puzzles.hint("block_sum")
    assert first.startswith("hint 1 of 3: ") and "puzzles.hint('block_sum', 2)" in first
    last = puzzles.hint("block_sum", 99)
    assert last.startswith("hint 3 of 3: ") and "says more" not in last
    for name in NAMES[:22]:
        assert puzzles.get(name).hints, name


# ---- the cp.async double buffer -------------------------------------------------------------

DB_T = 8


def test_a_single_buffer_breaks_the_method():
    def cp_async_double_buffer_kernel(out, a, b):
        sa = cuda.shared.array((DB_T, DB_T), float32)
        sb = cuda.shared.array((DB_T, DB_T), float32)
        x, y = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * DB_T + y, cuda.blockIdx.x * DB_T + x
        acc = float32(0.0)
        for k in range(a.shape[1] // DB_T):
            cuda.cp_async.copy(sa[y, x:], a[row, k * DB_T + x:], 4)
            cuda.cp_async.copy(sb[y, x:], b[k * DB_T + y, col:], 4)
            cuda.cp_async.wait_all()
            cuda.syncthreads()
            for j in range(DB_T):
                acc += sa[y, j] * sb[j, x]
            cuda.syncthreads()
        out[row, col] = acc

    grade = puzzles.check("cp_async_double_buffer", cp_async_double_buffer_kernel)
    text = repr(grade)
    assert not grade.passed and "at size (8, 8, 24)" in text
    assert "block (0, 0, 0) made 0 of its 3072 reads of shared memory while a copy was in " \
           "flight; with 3 tiles, 2 of them must be computed while the next one is copied" in text
    assert "issue (and commit) the copy of tile k + 1" in text


def test_refilling_a_buffer_others_still_read_is_caught():
    # the second cuda.syncthreads() is missing: a fast thread refills buffer k % 2 while its
    # neighbours still read it. The CPU target lands the copy late, so the product is right;
    # the access log shows the read of memory a pending copy owns.
    def cp_async_double_buffer_kernel(out, a, b):
        sa = cuda.shared.array((2, DB_T, DB_T), float32)
        sb = cuda.shared.array((2, DB_T, DB_T), float32)
        x, y = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * DB_T + y, cuda.blockIdx.x * DB_T + x
        tiles = a.shape[1] // DB_T
        cuda.cp_async.copy(sa[0, y, x:], a[row, x:], 4)
        cuda.cp_async.copy(sb[0, y, x:], b[y, col:], 4)
        cuda.cp_async.commit_group()
        acc = float32(0.0)
        for k in range(tiles):
            if k + 1 < tiles:
                cuda.cp_async.copy(sa[(k + 1) % 2, y, x:], a[row, (k + 1) * DB_T + x:], 4)
                cuda.cp_async.copy(sb[(k + 1) % 2, y, x:], b[(k + 1) * DB_T + y, col:], 4)
            cuda.cp_async.commit_group()
            cuda.cp_async.wait_group(1)
            cuda.syncthreads()
            for j in range(DB_T):
                acc += sa[k % 2, y, j] * sb[k % 2, j, x]
        out[row, col] = acc

    grade = puzzles.check("cp_async_double_buffer", cp_async_double_buffer_kernel)
    text = repr(grade)
    assert not grade.passed and "'out' is wrong" not in text, text
    assert re.search(r"read of s[ab]\[\d+\] at line \d+ by thread \(\d, \d, 0\) of block "
                     r"\(0, 0, 0\) while the asynchronous copy issued at line \d+", text), text


def test_reading_global_memory_directly_breaks_the_method():
    def cp_async_double_buffer_kernel(out, a, b):
        sa = cuda.shared.array((2, DB_T, DB_T), float32)
        x, y = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * DB_T + y, cuda.blockIdx.x * DB_T + x
        sa[0, y, x] = 0.0
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        out[row, col] = acc

    text = repr(puzzles.check("cp_async_double_buffer", cp_async_double_buffer_kernel))
    assert "64 threads read global memory directly (thread 0: 48 reads)" in text
    assert "through cuda.cp_async.copy only" in text


def test_prefetching_past_the_last_tile_is_reported_at_the_copy():
    def cp_async_double_buffer_kernel(out, a, b):
        sa = cuda.shared.array((2, DB_T, DB_T), float32)
        sb = cuda.shared.array((2, DB_T, DB_T), float32)
        x, y = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * DB_T + y, cuda.blockIdx.x * DB_T + x
        cuda.cp_async.copy(sa[0, y, x:], a[row, x:], 4)
        cuda.cp_async.copy(sb[0, y, x:], b[y, col:], 4)
        cuda.cp_async.commit_group()
        acc = float32(0.0)
        for k in range(a.shape[1] // DB_T):
            cuda.cp_async.copy(sa[(k + 1) % 2, y, x:], a[row, (k + 1) * DB_T + x:], 4)
            cuda.cp_async.copy(sb[(k + 1) % 2, y, x:], b[(k + 1) * DB_T + y, col:], 4)
            cuda.cp_async.commit_group()
            cuda.cp_async.wait_group(1)
            cuda.syncthreads()
            for j in range(DB_T):
                acc += sa[k % 2, y, j] * sb[k % 2, j, x]
            cuda.syncthreads()
        out[row, col] = acc

    text = repr(puzzles.check("cp_async_double_buffer", cp_async_double_buffer_kernel))
    assert "the kernel failed" in text and "the source view holds 0 bytes, the copy moves 4" \
        in text, text
    assert "cuda.cp_async.copy(sa[(k + 1) % 2, y, x:], a[row, (k + 1) * DB_T + x:], 4)" in text


def test_the_double_buffer_statement_names_its_method():
    text = repr(puzzles.get("cp_async_double_buffer"))
    assert "method: every global read through cuda.cp_async.copy" in text


def test_a_hidden_size_of_one_element_asks_for_no_sharing():
    # seed 2948006733 draws conv1d's hidden size (1, 1): thread 0 alone loads `a` and `b`, the
    # other threads store padding zeros, and the one output needs no neighbour's value - the
    # reference solution was failed for "no thread read a value another thread stored"
    grade = puzzles.check("conv1d", solutions.SOLUTIONS["conv1d"], seed=2948006733)
    assert grade.passed, repr(grade)
