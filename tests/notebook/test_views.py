"""Static renderings: code listings, Source<->PTX split views, tables, the SASS line map."""

import re

from gpunb.jit.report import sass_line_map
from gpunb.notebook import codeviews, render

SOURCE = "def k(out):\n    i = 1\n    out[i] = 2\n"
PTX = "\n".join(f"instr{n}" for n in range(1, 11))
MAPPING = {2: [3, 4], 3: [6, 7, 8]}


def test_split_view_links_lines_both_ways():
    html = codeviews.split_view("v1", SOURCE, 1, PTX, "ptx", MAPPING, selected_source=3)
    # source lines 2 and 3 and their PTX lines carry the shared data-l key
    assert re.search(r'class="gl mapped s" data-l="2"', html)
    assert len(re.findall(r'class="gl mapped t(?: sel)?" data-l="3"', html)) == 3
    # the pinned selection highlights line 3 and exactly its PTX lines
    assert len(re.findall(r'class="gl mapped t sel"', html)) == 3
    assert 'class="gl mapped s sel" data-l="3"' in html
    # hover rules, scoped to this view's id, one pair per mapped line
    assert '#v1:has(.s[data-l="2"]:hover) .t[data-l="2"]' in html
    assert '#v1:has(.t[data-l="3"]:hover) .s[data-l="3"]' in html


def test_excerpt_shows_only_the_mapped_lines():
    html = codeviews.excerpt(PTX, [7, 6, 8, 99], "ptx")
    assert html.count('class="gl sel"') == 3
    assert "instr6" in html and "instr8" in html and "instr5" not in html


def test_code_is_escaped_without_pygments(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pygments(name, *args, **kwargs):
        if name.startswith("pygments"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pygments)
    lines = render.highlight_lines("a < b\nx & y", "python")
    assert lines == ["a &lt; b", "x &amp; y"]


def test_highlighting_keeps_one_html_line_per_line():
    code = 'def f(x):\n    """doc\n    string"""\n    return x\n'
    assert len(render.highlight_lines(code, "python")) == len(code.splitlines())
    assert len(render.highlight_lines(PTX, "ptx")) == 10


def test_text_table_aligns_columns():
    text = render.text_table(("a", "long header"), [["xyz", 1], ["q", 22]])
    lines = text.splitlines()
    assert lines[0].index("long header") == lines[2].index("1")


def test_sass_line_map_reads_nvdisasm_markers():
    sass = "\n".join([
        "header",
        '\t//## File "<cell-1>", line 5',
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;",
        "        /*0010*/                   S2R R0, SR_TID.X ;",
        '\t//## File "other.py", line 9',
        "        /*0020*/                   IMAD R0, R0, 2 ;",
        '\t//## File "<cell-1>", line 6',
        "        /*0030*/                   EXIT ;",
    ])
    assert sass_line_map(sass, "<cell-1>") == {5: [3, 4], 6: [8]}


def test_sass_line_map_leaves_out_padding_and_counts_live_registers():
    from gpunb.backends.cuda.sass import parse_live_registers
    from gpunb.jit.report import sass_line_counts

    sass = "\n".join([
        '\t//## File "<cell-1>", line 5',
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;",
        "        /*0010*/                   S2R R0, SR_TID.X ;",
        ".L_x_2:",
        "        /*0020*/                   EXIT ;",
        ".L_x_0:",
        "        /*0030*/                   BRA `(.L_x_0);",
        "        /*0040*/                   NOP;",
    ])
    sass_map = sass_line_map(sass, "<cell-1>")
    assert sass_map == {5: [2, 3, 5]}  # the EXIT after a label counts; BRA-to-itself, NOP not
    life = "\n".join([
        "        /*0000*/     LDC R1, c[0x0][0x28] ;       // |   1   |        |        |",
        "        /*0010*/     S2R R0, SR_TID.X ;           // |   2   |        |   1    |",
        ".L_x_2:                                          // |   2   |        |        |",
        "        /*0020*/     EXIT ;                       // |       |        |        |",
    ])
    live = parse_live_registers(life)
    assert live == {0x0: 1, 0x10: 2, 0x20: 0}
    assert sass_line_counts(sass, sass_map, live) == {5: (3, 2)}
    assert sass_line_counts(sass, sass_map, None) == {5: (3, None)}


def test_code_block_notes_follow_their_line():
    html = render.code_block("a = 1\nb = 2\n", "python", first_line=7, notes={8: "3 instr"})
    rows = html.split('<span class="gl')[1:]
    assert '<span class="note">3 instr</span>' in rows[1] and "note" not in rows[0]


def test_split_view_panes_scroll_together():
    html = codeviews.split_view("v2", SOURCE, 1, PTX, "ptx", MAPPING)
    # both listings report their scrolling; one checkbox (on) turns the following off
    assert html.count('<pre class="gpunb-code " onscroll="window.gpunbInsp&amp;&amp;'
                      'gpunbInsp.sync&amp;&amp;gpunbInsp.sync(this)"') == 2
    assert html.count('<input type="checkbox" class="gpunb-sync" checked>') == 1
    # the handlers are versioned: a page holding an older gpunb's object gets this one
    assert "gpunbInsp.v!==3" in codeviews.PIN_JS and "sync(pre){" in codeviews.PIN_JS


def test_sass_of_an_inlined_callee_counts_for_its_call_line():
    """ptxas marks the callee's instructions with the callee's cell and line; the PTX line map
    (the callee's PTX under the call line, from DWARF inlinedAt) credits them to the call line."""
    ptx = "\n".join([
        '\t.loc\t1 5 3',            # 1: the kernel's line 5
        "\tmov.u32 %r1, %tid.x;",   # 2
        '\t.loc\t2 2 1',            # 3: the helper, another cell's line 2
        "\tmul.f32 %r2, %r1, 2.0;",  # 4
        '\t.loc\t1 6 3',            # 5
        "\tst.global.f32 [%rd1], %r2;",  # 6
        '\t.file\t1 "/c/kernel.py"',
        '\t.file\t2 "/c/helper.py"',
    ])
    line_map = {5: [2], 6: [4, 6], 2: [4]}  # the helper's PTX line 4 also under call line 6
    sass = "\n".join([
        '\t//## File "/c/kernel.py", line 5',
        "        /*0000*/   S2R R0, SR_TID.X ;",
        '\t//## File "/c/helper.py", line 2',
        "        /*0010*/   FMUL R0, R0, 2 ;",
        '\t//## File "/c/kernel.py", line 6',
        "        /*0020*/   STG.E desc[UR4][R2.64], R0 ;",
    ])
    assert sass_line_map(sass, "/c/kernel.py") == {5: [2], 6: [6]}
    assert sass_line_map(sass, "/c/kernel.py", ptx, line_map, range(4, 8)) == \
        {5: [2], 6: [4, 6]}


def test_tables_keep_headers_whole_in_jupyterlab():
    """JupyterLab's output tables are laid out fixed and `overflow-wrap:anywhere` split words
    ("launche s", "occupanc y"): gpunb's tables size columns by content, headers never wrap,
    cells wrap only between words, and a narrow output scrolls the table."""
    from gpunb.notebook import render

    table = render.table(["function", "compile ms"], [["saxpy", "1.0"]])
    assert table.startswith('<div class="gpunb-scroll">')
    style = render.STYLE
    assert "overflow-wrap:anywhere" not in style
    assert re.search(r"table\.gpunb-table\{[^}]*table-layout:auto", style)
    assert re.search(r"table\.gpunb-table th\{[^}]*white-space:nowrap", style)


def test_outcome_colours_keep_contrast_in_both_themes():
    """hit / miss / failed text mixes the theme's colour with its strongest text colour (black
    in the light theme, white in the dark one) instead of the light 1-shades (#f57c00 on white
    is 2.9:1)."""
    from gpunb.notebook import render

    for name in ("HIT", "MISS", "BAD"):
        colour = getattr(render, name)
        assert colour.startswith("color-mix(") and "var(--jp-ui-font-color0" in colour
        assert colour in render.STYLE
