"""The inspector and the launch explorer on a real kernel (CPU target): data, selection, views."""

from __future__ import annotations

import numpy as np
import pytest
from nbhelpers import html_text

from gpunb import cuda
from gpunb.notebook.explorer import LaunchChoice, launch_explorer, normalise
from gpunb.notebook.inspector import inspector_for


@cuda.jit
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@pytest.fixture(scope="module")
def compiled():
    import gpunb

    gpunb.set_target("cpu")
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    saxpy[1, 64](out, x, x, np.float32(2.0))
    assert out[3] == 9.0
    yield saxpy
    gpunb.set_target(None)


def _line_of(text: str) -> int:
    first = saxpy.py_func.__code__.co_firstlineno
    import inspect

    lines = inspect.getsource(saxpy.py_func).splitlines()
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_report_has_every_stage(compiled):
    insp = inspector_for(compiled)
    r = insp.report
    assert r.target == "cpu" and r.arch == "sm_90"
    assert ".visible .entry saxpy" in r.ptx and "define" in r.llvm_ir
    assert "a: float32" in r.types.replace("  ", " ") or "float32" in r.types
    assert r.resources["registers"] > 0
    assert "store_line" not in r.problems
    assert _line_of("out[i] =") in r.line_map


def test_selecting_a_line_highlights_its_ptx_and_back(compiled):
    insp = inspector_for(compiled)
    store = _line_of("out[i] =")
    ptx_lines = insp.select_line(store)
    assert ptx_lines and all(insp.report.ptx_to_source()[p] == store for p in ptx_lines)
    assert insp.select_ptx_line(ptx_lines[0]) == store
    html = insp.tab_html("ptx")
    assert html.count(" sel\"") >= len(ptx_lines)
    assert "st.global" in html_text(insp.link_summary_html())  # the store's PTX excerpt


def test_widget_selection_model(compiled):
    insp = inspector_for(compiled)
    widget = insp.widget()
    store = _line_of("out[i] =")
    widget.link.value = store
    assert insp.selected_line == store
    assert 'class="gl mapped t sel"' in widget.views["ptx"].value
    widget.ptx_line.value = insp.report.line_map[_line_of("i = cuda.grid")][0]
    assert widget.link.value == _line_of("i = cuda.grid")
    assert widget.line_map.value.startswith(str(min(insp.report.line_map)))


def test_other_arch_and_static_forms(compiled):
    insp = inspector_for(compiled, arch="sm_80")
    assert insp.report.arch == "sm_80" and ".target sm_80" in insp.report.ptx
    html = insp._repr_html_()
    assert "<details open><summary>PTX</summary>" in html and ":hover" in html
    insp.text_tabs = ("ptx",)
    assert "---- PTX ----" in repr(insp) and "<" + "span" not in repr(insp)
    bundle = insp._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}  # no widget outside a kernel


def test_explorer_rows_apply_and_widget(compiled):
    explorer = launch_explorer(compiled, 100_000)
    rows = explorer.rows()
    assert [r.block for r in rows][:3] == [32, 64, 128]
    assert all(0 < r.occupancy_pct <= 100 for r in rows)
    assert {r.limiter for r in rows} <= {"warps", "blocks", "registers", "shared_memory"}
    widget = explorer.widget()
    widget.block.value = 768
    assert explorer.row().block == 768 and widget.occupancy.value == explorer.row().occupancy_pct
    widget.shared.value = 120 * 1024  # dynamic shared memory now limits residency
    assert explorer.row().limiter == "shared_memory"
    choice = explorer.apply()
    assert compiled.launch_config == choice == LaunchChoice(131, 768, 0, 120 * 1024)
    assert "▶ 768" in repr(explorer)


def test_normalise_accepts_dicts_and_percentages():
    row = normalise({"occupancy": 0.5, "active_warps": 32, "max_warps": 64,
                     "active_blocks": 4, "limiter": "registers"}, 256, 10)
    assert row.occupancy_pct == 50.0 and row.limiter == "registers"
    assert normalise({"occupancy_percent": 75.0}, 32, 1).occupancy_pct == 75.0


def test_explorer_refuses_a_configuration_that_cannot_launch(compiled):
    from gpunb.foundation.errors import LaunchError

    explorer = launch_explorer(compiled, 1 << 20, arch="sm_75", block=256, shared=200_000)
    assert "will not launch" in explorer.text().splitlines()[0]
    assert "200,000 B of shared memory per block; sm_75 allows at most 65,536 B" \
        in explorer.problem()
    assert "will not launch" in html_text(explorer._repr_html_())
    assert explorer.suggested_block is None  # no block size fits that much shared memory
    compiled.launch_config = None
    with pytest.raises(LaunchError, match="will not launch"):
        explorer.apply()
    assert compiled.launch_config is None and explorer.applied is None
    widget = explorer.widget()
    widget.apply_button.click()  # the widget says why instead of storing it
    assert "not applied" in widget.applied.value and compiled.launch_config is None
    widget.shared.value = 0
    assert explorer.problem() is None
    assert "occupancy by block size on sm_75" in widget.table.value
    assert 'class="best"' in widget.table.value  # the current block's row is marked


def test_explorer_suggest_honours_the_chosen_arch(compiled):
    from gpunb.backends.cuda import occupancy

    explorer = launch_explorer(compiled, 1 << 20, arch="sm_90", block=64, shared=40_000)
    regs = int(explorer.resources.get("registers") or 0)
    static = int(explorer.resources.get("shared_bytes") or 0)
    for arch in ("sm_75", "sm_90"):
        explorer.arch = arch
        expected = occupancy.suggest_block_size(arch, regs, static + 40_000)["block_size"]
        assert explorer.suggested_block == expected
    explorer.arch = "sm_75"
    widget = explorer.widget()
    widget.suggest_button.click()
    assert widget.block.value == explorer.suggested_block
    assert explorer.row().active_blocks > 0


def test_split_view_pins_on_click_and_offers_search_and_copy(compiled):
    insp = inspector_for(compiled, tab="ptx", arch="sm_90")
    html = insp.tab_html("ptx")
    assert 'onclick="window.gpunbInsp&amp;&amp;gpunbInsp.pin(event,this)"' in html
    assert "gpunbInsp.find(this)" in html and "gpunbInsp.copy(this)" in html
    assert "onerror=" in html  # installs the handlers when the HTML is drawn
    assert 'class="err"' not in html  # PTX lexer: no error tokens (red boxes)
    assert 'class="err"' not in insp.tab_html("llvm")
    assert "nvptx64" in insp.report.llvm_ir  # the device IR of the shown arch, not the host's
    assert "#ffe9a8" not in html and "var(--jp-" in insp._repr_html_()


def test_sass_view_counts_instructions_and_live_registers_per_line(compiled):
    """nvdisasm -g attributes SASS to source lines, its life ranges give the registers live at
    each instruction: the SASS tab notes both on each source line."""
    from gpunb.backends.cuda.toolchain import find_tool

    if find_tool("nvdisasm") is None or find_tool("ptxas") is None:
        pytest.skip("needs ptxas and nvdisasm (the nvidia-cuda-nvcc / -nvdisasm wheels)")
    insp = inspector_for(compiled, arch="sm_90")
    r = insp.report
    store = _line_of("out[i] =")
    count, live = r.sass_counts[store]
    # the store line: its loads, the FFMA and the STG, and every one of them counted
    assert count == len(r.sass_map[store]) and count >= 4
    sass_lines = r.sass.splitlines()
    assert any("STG" in sass_lines[n - 1] for n in r.sass_map[store])
    assert not any(sass_lines[n - 1].strip().endswith("NOP ;") for ns in r.sass_map.values()
                   for n in ns)  # padding is no line's code
    # registers: x, y, out addresses (2 each) and values are live around the FFMA
    assert 4 <= live <= r.resources["registers"]
    html = insp.tab_html("sass")
    assert f'<span class="note">{count} instr, {live} regs live</span>' in html
    assert f"{store}: {count} instr, {live} regs live" in r.text()
    insp.select_line(store)
    assert f"SASS: {count} instr, {live} regs live" in insp.link_summary_html()


@cuda.jit(device=True)
def _root_helper(x, a):
    t = x * a + 1.0
    return t * t - a


@cuda.jit
def _calls_helper(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = _root_helper(x[i], a)  # <- call line


def test_sass_of_an_inlined_device_function_counts_for_the_call_line(compiled):
    from gpunb.backends.cuda.toolchain import find_tool

    if find_tool("nvdisasm") is None or find_tool("ptxas") is None:
        pytest.skip("needs ptxas and nvdisasm (the nvidia-cuda-nvcc / -nvdisasm wheels)")
    r = inspector_for(_calls_helper, "void(float32[::1], float32[::1], float32)",
                      arch="sm_90").report
    first = _root_helper.py_func.__code__.co_firstlineno
    helper_lines = {first + 2, first + 3}
    call = next(n for n in r.source_lines if "<- call line" in
                r.source.splitlines()[n - r.first_line])
    from gpunb.jit.report import sass_line_map

    # the helper's lines are outside the kernel; ptxas gives them FFMA/FMUL instructions
    plain = sass_line_map(r.sass, r.source_file)
    helper_sass = sorted(n for line in helper_lines for n in plain.get(line, []))
    assert helper_sass, plain
    assert set(helper_sass) <= set(r.sass_map[call])  # credited to the call line
    assert r.sass_counts[call][0] == len(r.sass_map[call]) > len(plain.get(call, []))


def test_the_ptx_line_box_follows_the_selection(compiled):
    """Picking a source line (or clicking one: the picker follows) puts its first PTX line in
    the 'PTX line' box; typing a PTX line there keeps that line; clearing shows 0."""
    insp = inspector_for(compiled)
    widget = insp.widget()
    store = _line_of("out[i] =")
    widget.link.value = store
    assert widget.ptx_line.value == insp.report.line_map[store][0]
    typed = insp.report.line_map[store][-1]
    widget.ptx_line.value = typed
    assert insp.selected_line == store and widget.ptx_line.value == typed
    widget.link.value = _line_of("i = cuda.grid")
    assert widget.ptx_line.value == insp.report.line_map[_line_of("i = cuda.grid")][0]
    widget.link.value = None
    assert widget.ptx_line.value == 0 and insp.selected_line is None
    assert "gpunb-ptx-line" in widget.ptx_line._dom_classes  # the click handler finds it


SASS_SAMPLE = """\t.section\t.text.k,"ax",@progbits
\t//## File "{path}", line 7
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_1:
        /*0090*/               @P0 EXIT ;
        /*00a0*/              @!P1 BRA `(.L_x_0) ;
        /*01b0*/                   EXIT ;"""


def test_sass_reads_in_columns_and_names_the_cell(tmp_path, monkeypatch):
    """nvdisasm's ~35 columns of indentation go (opcodes start right after the address and a
    predicate field), and the cache's copy of a cell's text is named as the cell."""
    import linecache

    from gpunb.foundation import sources
    from gpunb.notebook.asmview import tidy_ptx, tidy_sass

    monkeypatch.setenv("GPUNB_CACHE_DIR", str(tmp_path))
    cell = "/tmp/ipykernel_77/cell9.py"
    linecache.cache[cell] = (10, None, ["x = 1\n"], cell)
    sources.register_cell(cell, 9)
    copy = sources.debug_source_path(cell)
    assert copy.startswith(str(tmp_path)) and copy != cell
    tidy = tidy_sass(SASS_SAMPLE.format(path=copy))
    lines = tidy.splitlines()
    assert len(lines) == len(SASS_SAMPLE.splitlines())  # line maps stay true
    assert lines[1] == "  //## Cell In[9], line 7" and copy not in tidy
    # opcodes in one column: after the address and a predicate field as wide as the widest
    assert lines[2] == "/*0000*/      LDC R1, c[0x0][0x28] ;"
    assert lines[4] == "/*0090*/ @P0  EXIT ;" and lines[5] == "/*00a0*/ @!P1 BRA `(.L_x_0) ;"
    assert lines[3] == ".L_x_1:"
    ptx = f'.version 7.8\n\t.file\t1 "{copy}"\n'
    assert tidy_ptx(ptx).splitlines()[1] == '\t.file\t1 "Cell In[9]"'
    other = str(tmp_path / "sources" / "0123456789abcdef0123.py")  # another process's copy
    assert 'File "a notebook cell"' not in tidy_sass(f'//## File "{other}", line 2')
    assert "a notebook cell, line 2" in tidy_sass(f'\t//## File "{other}", line 2')


def test_the_sass_tab_shows_opcodes_near_the_left_edge(compiled):
    from gpunb.backends.cuda.toolchain import find_tool

    if find_tool("nvdisasm") is None or find_tool("ptxas") is None:
        pytest.skip("needs ptxas and nvdisasm (the nvidia-cuda-nvcc / -nvdisasm wheels)")
    insp = inspector_for(compiled, arch="sm_90")
    rows = [html_text(row.partition(">")[2])
            for row in insp.tab_html("sass").split('<span class="gl')]
    stg = next(row for row in rows if "STG" in row)  # '>46/*01a0*/     STG.E desc...'
    assert stg.index("STG") < 20, stg  # line number, address, predicate field, opcode
    assert not any("/sources/" in row for row in rows)


def test_the_text_form_shows_the_listings_as_the_tabs_do(compiled):
    from gpunb.notebook.asmview import tidy_sass

    insp = inspector_for(compiled, arch="sm_90")
    text = insp.text(("sass",))
    if insp.report.sass:
        assert tidy_sass(insp.report.sass).splitlines()[-1] in text
        assert "/sources/" not in text


def test_inspector_for_refuses_what_it_cannot_show(compiled):
    """inspector_for(42) was an AttributeError from inside it and tab='bogus' silently showed
    the PTX tab; arch=75 showed "PTX for 75" (now named sm_75)."""
    from gpunb.foundation.errors import JitOptionError

    with pytest.raises(JitOptionError, match="inspector_for needs a GPU function"):
        inspector_for(42)
    with pytest.raises(JitOptionError, match="tab='bogus' is not one of source, types"):
        inspector_for(compiled, tab="bogus")
    assert inspector_for(compiled, arch=75).report.arch == "sm_75"
