"""`--ncu`: the snapshotted launches replayed under Nsight Compute, and its report read back.

The child runs under `ncu --section ... --import-source yes -o report`; the report is read with
`ncu -i report --csv` three times: `--page details` (speed of light, occupancy, DRAM
throughput), `--page raw` (warp-stall reasons, DRAM bytes per second) and `--page source
--print-source sass` (warp-stall samples per SASS instruction). SASS offsets map to source lines
through the line table of the child's cubin (relinked with line info), read with nvdisasm.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from gpunb.profiling import tools

SECTIONS = ("SpeedOfLight", "Occupancy", "WarpStateStats", "SourceCounters",
            "MemoryWorkloadAnalysis")
DETAIL_METRICS = ("Duration", "Memory Throughput", "DRAM Throughput", "Compute (SM) Throughput",
                  "Achieved Occupancy", "Theoretical Occupancy", "Registers Per Thread")
_STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
_LINE = re.compile(r'//## File "([^"]+)", line (\d+)')
_OFFSET = re.compile(r"/\*([0-9a-f]{4,})\*/")
_UNITS = {"byte/s": 1e-9, "Kbyte/s": 1e-6, "Mbyte/s": 1e-3, "Gbyte/s": 1.0, "Tbyte/s": 1e3}


@dataclass
class NcuKernel:
    """One replayed launch as Nsight Compute measured it."""

    kernel: str  # the entry symbol
    metrics: dict = field(default_factory=dict)  # name -> (value, unit) from the details page
    dram_gbps: float | None = None
    stalls: list = field(default_factory=list)  # [(reason, warps per issue)], largest first
    hot_lines: dict = field(default_factory=dict)  # (file, line) -> stall samples

    def metric(self, name: str) -> float | None:
        found = self.metrics.get(name)
        return found[0] if found else None

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "metrics": {k: list(v) for k, v in self.metrics.items()},
                "dram_gbps": self.dram_gbps, "stalls": self.stalls,
                "hot_lines": [[f, ln, s] for (f, ln), s in self.hot_lines.items()]}


@dataclass
class NcuReport:
    kernels: list = field(default_factory=list)
    error: str = ""  # one line when ncu could not give counters

    def to_json(self) -> dict:
        return {"kernels": [k.to_json() for k in self.kernels], "error": self.error}

    def text(self) -> str:
        if self.error:
            return f"ncu: {self.error}"
        lines = []
        for k in self.kernels:
            sol = ", ".join(f"{n} {k.metric(n):g}%" for n in
                            ("Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput",
                             "Achieved Occupancy") if k.metric(n) is not None)
            dram = f"; DRAM {k.dram_gbps:.1f} GB/s" if k.dram_gbps is not None else ""
            stalls = ", ".join(f"{r} {v:.2f}" for r, v in k.stalls[:3])
            lines.append(f"ncu {k.kernel}: {sol}{dram}; top stalls: {stalls}")
            for (file, line), samples in top_lines(k, 3):
                lines.append(f"  hot line {source_name(file)}:{line}: {samples:.0f} stall samples")
        return "\n".join(lines) or "ncu: no kernels in the report"

    def html(self, sources: dict) -> str:
        import html as h

        from gpunb.profiling.view import heat_html

        if self.error:
            return f'<div class="gpunb-note">ncu: {h.escape(self.error)}</div>'
        parts = [f"<pre>{h.escape(self.text())}</pre>"]
        for k in self.kernels:
            by_file: dict = {}
            for (file, line), samples in k.hot_lines.items():
                by_file.setdefault(file, {})[line] = samples
            for file, heat in by_file.items():
                text = sources.get(file)
                if text:
                    parts.append(f"<div>{h.escape(k.kernel)}: stall samples per line of "
                                 f"{h.escape(source_name(file))}</div>"
                                 + heat_html(text, heat, min(heat) - 2, max(heat) + 2))
        return "".join(parts)


def source_name(file: str) -> str:
    """`Cell In[7]` for a notebook cell, the base name for a file."""
    from gpunb.foundation.sources import cell_label

    return cell_label(file) or Path(file).name


def top_lines(kernel: NcuKernel, n: int) -> list:
    return sorted(kernel.hot_lines.items(), key=lambda kv: -kv[1])[:n]


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _csv_rows(text: str) -> list:
    start = text.find('"')  # ncu prints ==PROF== lines before the CSV
    return list(csv.reader(io.StringIO(text[start:] if start >= 0 else "")))


def parse_details(text: str) -> dict:
    """{launch ID: (kernel name, {metric: (value, unit)})} from `--page details --csv`."""
    rows = _csv_rows(text)
    if not rows:
        return {}
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    out: dict = {}
    for row in rows[1:]:
        if len(row) < len(header) - 5:
            continue
        launch = row[col["ID"]]
        name = row[col["Kernel Name"]]
        metrics = out.setdefault(launch, (name, {}))[1]
        metric = row[col["Metric Name"]]
        value = _number(row[col["Metric Value"]])
        if metric and value is not None:
            metrics.setdefault(metric, (value, row[col["Metric Unit"]]))
    return out


def parse_raw(text: str) -> list:
    """[{metric: (value, unit)}] per launch from `--page raw --csv` (header, units, rows)."""
    rows = _csv_rows(text)
    if len(rows) < 3:
        return []
    header, units = rows[0], rows[1]
    return [{name: (_number(v), unit) for name, unit, v in zip(header, units, row, strict=False)}
            for row in rows[2:]]


def stalls_from_raw(raw: dict) -> list:
    out = []
    for name, (value, _) in raw.items():
        m = _STALL.match(name)
        if m and value:
            out.append((m.group(1), value))
    return sorted(out, key=lambda kv: -kv[1])


def dram_gbps_from_raw(raw: dict) -> float | None:
    value, unit = raw.get("dram__bytes.sum.per_second", (None, ""))
    if value is None or unit not in _UNITS:
        return None
    return value * _UNITS[unit]


def parse_source_sass(text: str) -> dict:
    """{kernel: [(offset, stall samples)]} from `--page source --print-source sass --csv`."""
    out: dict = {}
    kernel = None
    header = None
    base = None
    for row in _csv_rows(text):
        if not row:
            continue
        if row[0] == "Kernel Name":
            kernel, header, base = row[1], None, None
            out.setdefault(kernel, [])
            continue
        if row[0] == "Address":
            header = {name: i for i, name in enumerate(row)}
            continue
        if kernel is None or header is None:
            continue
        address = row[header["Address"]]
        try:
            address_value = int(address, 16)
        except ValueError:
            continue
        base = address_value if base is None else base
        column = header.get("Warp Stall Sampling (All Samples)")
        samples = _number(row[column]) if column is not None and column < len(row) else None
        out[kernel].append((address_value - base, samples or 0))
    return out


def line_table(sass_with_lines: str) -> list:
    """[(offset, file, line)] from `nvdisasm --print-line-info` output, in offset order."""
    table = []
    current = None
    for text in sass_with_lines.splitlines():
        m = _LINE.search(text)
        if m:
            current = (m.group(1), int(m.group(2)))
            continue
        o = _OFFSET.search(text)
        if o and current is not None:
            table.append((int(o.group(1), 16), *current))
    return table


def hot_lines(samples: list, table: list) -> dict:
    """Stall samples per (file, line): each SASS offset's samples go to its line."""
    by_offset = {offset: (file, line) for offset, file, line in table}
    out: dict = {}
    for offset, count in samples:
        where = by_offset.get(offset)
        if where is not None and count:
            out[where] = out.get(where, 0) + count
    return out


def disassemble_lines(cubin: Path) -> str:
    from gpunb.backends.cuda.toolchain import find_tool

    nvdisasm = find_tool("nvdisasm")
    if nvdisasm is None:
        return ""
    proc = subprocess.run([nvdisasm, "--print-line-info", "-c", str(cubin)],
                          capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else ""


def run_ncu(directory: Path, timeout: float = 300.0) -> NcuReport:
    """Replay the snapshot in `directory` under ncu and read the report back."""
    ncu = tools.require_tool("ncu")
    report = directory / "report"
    argv = [ncu]
    for section in SECTIONS:
        argv += ["--section", section]
    argv += ["--import-source", "yes", "-f", "-o", str(report), *tools.replay_command(directory)]
    proc = tools.run_tool(argv, "ncu", timeout)
    output = proc.stdout + proc.stderr
    tools.check_counters(output)
    rep = Path(f"{report}.ncu-rep")
    if not rep.exists():
        raise tools.ReplayError(f"ncu wrote no report: {tools.last_error_line(output)}")
    pages = {}
    for page, extra in (("details", []), ("raw", []), ("source", ["--print-source", "sass"])):
        done = tools.run_tool([ncu, "-i", str(rep), "--csv", "--page", page, *extra],
                              "ncu -i", timeout)
        pages[page] = done.stdout
        (directory / f"ncu_{page}.csv").write_text(done.stdout + done.stderr)
    return build_report(directory, pages)


def build_report(directory: Path, pages: dict) -> NcuReport:
    details = parse_details(pages.get("details", ""))
    raws = parse_raw(pages.get("raw", ""))
    sources = parse_source_sass(pages.get("source", ""))
    tables = {}
    for cubin in sorted(directory.glob("*.lineinfo.cubin")):
        symbol = cubin.name[: -len(".lineinfo.cubin")].split("@", 1)[-1]
        tables[symbol] = line_table(disassemble_lines(cubin))
    out = NcuReport()
    ordered = [details[key] for key in sorted(details, key=int)]
    for index, (name, metrics) in enumerate(ordered):
        raw = raws[index] if index < len(raws) else {}
        kernel = NcuKernel(name, {k: v for k, v in metrics.items() if k in DETAIL_METRICS},
                           dram_gbps_from_raw(raw), stalls_from_raw(raw))
        kernel.hot_lines = hot_lines(sources.get(name, []), tables.get(name, []))
        out.kernels.append(kernel)
    return out
