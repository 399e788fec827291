"""The ncu and compute-sanitizer readers, against outputs the tools wrote on an H100
(ncu 2025.3, compute-sanitizer of CUDA 13; kernels of .probe-style gpunb launches)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpunb.profiling import ncu, sanitizer

DATA = Path(__file__).parent / "data"


def test_memcheck_out_of_bounds_reads_fold_into_one_finding_at_the_line():
    report = sanitizer.parse_text((DATA / "memcheck_oob.txt").read_text(), "memcheck")
    assert len(report.findings) == 1
    finding = report.findings[0]
    assert finding.what == "Invalid __global__ read of size 4 bytes"
    assert (finding.kernel, Path(finding.file).name, finding.line) == \
        ("oob__float321_float321", "kernels.py", 43)
    assert (finding.thread, finding.block) == ("0,0,0", "0,0,0")
    assert finding.count == 5 and "out of bounds" in finding.detail
    assert report.summary == "error summary: 257 errors"
    assert "kernels.py:43" in report.text() and not report.clean


def test_racecheck_hazard_names_both_lines_threads_and_block():
    report = sanitizer.parse_text((DATA / "racecheck_shared.txt").read_text(), "racecheck")
    [finding] = report.findings
    assert finding.what == "RAW hazard" and finding.block == "0,0,0"
    assert (finding.line, finding.other_line) == (50, 51)
    assert "write by thread (1,0,0)" in finding.detail and "read by thread (0,0,0)" in \
        finding.detail
    assert report.summary.startswith("racecheck summary: 100 hazards")


def test_clean_sanitizer_output_has_no_findings():
    text = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
    report = sanitizer.parse_text(text, "memcheck")
    assert report.clean and "no problems found" in report.text()


def test_ncu_details_give_speed_of_light_and_occupancy():
    details = ncu.parse_details((DATA / "ncu_details_matmul.csv").read_text())
    [(name, metrics)] = details.values()
    assert name == "matmul__float321_float321_float321"
    assert metrics["DRAM Throughput"] == (0.61, "%")
    assert metrics["Memory Throughput"][0] == pytest.approx(80.42)
    assert metrics["Duration"] == (51.49, "us")
    assert 0 < metrics["Achieved Occupancy"][0] <= 100


def test_ncu_raw_gives_dram_bandwidth_and_stall_reasons():
    [raw] = ncu.parse_raw((DATA / "ncu_raw_matmul.csv").read_text())
    assert ncu.dram_gbps_from_raw(raw) == pytest.approx(20.459913)
    stalls = ncu.stalls_from_raw(raw)
    assert stalls[0][0] == "mio_throttle" and stalls[0][1] == pytest.approx(5.576303)
    assert [s[1] for s in stalls] == sorted((s[1] for s in stalls), reverse=True)


def test_build_report_combines_pages(tmp_path):
    pages = {"details": (DATA / "ncu_details_matmul.csv").read_text(),
             "raw": (DATA / "ncu_raw_matmul.csv").read_text(), "source": ""}
    report = ncu.build_report(tmp_path, pages)
    [kernel] = report.kernels
    assert kernel.metric("DRAM Throughput") == 0.61 and kernel.dram_gbps > 0
    assert "mio_throttle" in report.text() and report.to_json()["kernels"][0]["stalls"]


def test_line_table_and_hot_lines_from_nvdisasm_line_info():
    sass = ('\t//## File "/x/cell.py", line 9\n        /*0000*/   LDC R1, c[0x0][0x28] ;\n'
            '\t//## File "/x/cell.py", line 13\n        /*0150*/   LDG.E R2, desc[UR4][R2.64] ;\n'
            '        /*0160*/   LDG.E R5, desc[UR4][R4.64] ;\n')
    table = ncu.line_table(sass)
    assert table == [(0, "/x/cell.py", 9), (0x150, "/x/cell.py", 13), (0x160, "/x/cell.py", 13)]
    assert ncu.hot_lines([(0, 1), (0x150, 7), (0x160, 5)], table) == \
        {("/x/cell.py", 9): 1, ("/x/cell.py", 13): 12}


def test_source_page_offsets_are_relative_to_the_kernels_first_instruction():
    text = ('"Kernel Name","k",\n"Address","Source","Warp Stall Sampling (All Samples)"\n'
            '"0x7f0000000100","LDC R1","2"\n"0x7f0000000110","S2R R2","30"\n')
    assert ncu.parse_source_sass(text) == {"k": [(0, 2), (0x10, 30)]}


def test_hot_lines_of_the_tiled_matmul_from_its_real_source_page_and_cubin(tmp_path):
    """ncu's SASS source page of profiling_kernels.matmul on an H100 plus the line table of the
    replay's cubin: the inner product line takes the most stall samples."""
    from gpunb.backends.cuda.toolchain import find_tool

    if find_tool("nvdisasm") is None:
        pytest.skip("nvdisasm not found (pip install nvidia-cuda-nvdisasm)")
    cubin = tmp_path / "kernel0@matmul__float321_float321_float321.lineinfo.cubin"
    cubin.write_bytes((DATA / "matmul_lineinfo.cubin").read_bytes())
    pages = {"details": (DATA / "ncu_details_matmul.csv").read_text(),
             "raw": (DATA / "ncu_raw_matmul.csv").read_text(),
             "source": (DATA / "ncu_source_matmul.csv").read_text()}
    report = ncu.build_report(tmp_path, pages)
    [kernel] = report.kernels
    (file, line), samples = ncu.top_lines(kernel, 1)[0]
    text = (Path(__file__).parent / "profiling_kernels.py").read_text()
    source = text.splitlines()
    assert Path(file).name == "profiling_kernels.py" and samples > 1000
    assert source[line - 1].strip() == "tmp += sA[ty, j] * sB[j, tx]"
    assert sum(kernel.hot_lines.values()) > 5000
    share = samples / sum(kernel.hot_lines.values()) * 100
    html = report.html({file: text})  # the source view with per-line heat
    assert "stall samples per line of profiling_kernels.py" in html
    assert f"{share:5.1f}%</span>  {source[line - 1]}</span>" in html

