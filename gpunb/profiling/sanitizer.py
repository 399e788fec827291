"""`--sanitize TOOL`: the snapshotted launches replayed under compute-sanitizer, its text report
parsed into findings at the kernel's source lines (the replay's cubin carries line info).

compute-sanitizer names the file's base name and line (`at race__float321+0xd0 in cell.py:5`),
the thread and block, and for races the other access; the findings keep that and the snapshot's
source files turn a base name back into the file or cell it came from.

What each tool sees (NVIDIA's Compute Sanitizer guide): memcheck, out-of-bounds and misaligned
global, local and shared accesses; racecheck, hazards on shared memory only (never global
memory); synccheck, divergent `syncthreads()` and a `syncwarp` whose mask leaves out a calling
lane (not lanes named in the mask that never arrive); initcheck, reads of memory never written -
global by default, shared too with `--initcheck-address-space all` (compute-sanitizer 2025.4 and
later; older ones check global memory only, and the report's notes say so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gpunb.profiling import tools

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
_PREFIX = re.compile(r"^=+ ?")
# the kernel may be a demangled C++ prototype with spaces: `at k(const int *, int)+0x200 in f.cu:9`
_AT = re.compile(r"at (.+?)\+0x([0-9a-f]+) in (.+?):(\d+)\s*$")
_THREAD = re.compile(r"by thread \(([\d,]+)\) in block \(([\d,]+)\)")
_RACE_SIDE = re.compile(r"(Read|Write) Thread \(([\d,]+)\) at (.+?)\+0x([0-9a-f]+) in (.+?):(\d+)")
_HAZARD = re.compile(r"(?:Error|Warning): .*?(RAW|WAR|WAW) hazard")
_BLOCK = re.compile(r"in block \(([\d,]+)\)")
_SUMMARY = re.compile(r"(ERROR|RACECHECK) SUMMARY: (.+)")
# the first line of a report: memcheck's invalid accesses and hardware exceptions, synccheck's
# "Barrier error detected. ...", initcheck's "Uninitialized __shared__ memory read ...", and the
# host side of a failed kernel ("Program hit CUDA_ERROR_LAUNCH_FAILED ...")
_STARTS = ("Invalid ", "Barrier error", "Uninitialized", "Divergent", "Program hit", "Error:",
           "Warning:", "Race reported", "Out-of-range", "Misaligned", "Illegal",
           "Potential invalid", "Warpgroup MMA")
# compute-sanitizer older than 2025.4 does not know initcheck's address-space option
_REPLAY_FAILED = re.compile(r"gpunb replay: launch \d+ \(.*?\) failed: .*")
_UNKNOWN_OPTION = re.compile(r"unrecogni[sz]ed option|unknown option", re.IGNORECASE)


@dataclass
class Finding:
    """One report: what, where (file, line of the kernel's source), which thread and block."""

    tool: str
    what: str  # "Invalid __global__ read of size 4 bytes", "RAW hazard", "Barrier error" ...
    kernel: str = ""
    file: str = ""
    line: int | None = None
    thread: str = ""
    block: str = ""
    detail: str = ""  # "Access to 0x... is out of bounds", the other side of a race
    other_line: int | None = None
    count: int = 1  # identical reports (same what and line) folded into one

    def location(self) -> str:
        """`Cell In[7]:5` or `kernels.py:43`; compute-sanitizer gives base names only."""
        if not self.file:
            return ""
        from gpunb.foundation.sources import cell_label

        return f"{cell_label(self.file) or Path(self.file).name}:{self.line}"

    def text(self) -> str:
        if not self.file:
            return f"{self.tool}: {self.what}" + (f" - {self.detail}" if self.detail else "")
        times = f" ({self.count} times)" if self.count > 1 else ""
        who = f", thread ({self.thread}) block ({self.block})" if self.thread else \
            (f", block ({self.block})" if self.block else "")
        other = f", other access at line {self.other_line}" if self.other_line else ""
        return f"{self.tool}: {self.what} at {self.location()} in {self.kernel}{who}{other}" \
               f"{times}" + (f" - {self.detail}" if self.detail else "")


@dataclass
class SanitizerReport:
    tool: str
    findings: list = field(default_factory=list)
    summary: str = ""
    error: str = ""
    notes: list = field(default_factory=list)  # what the run could not check, and why

    @property
    def clean(self) -> bool:
        return not self.findings and not self.error

    def to_json(self) -> dict:
        return {"tool": self.tool, "summary": self.summary, "error": self.error,
                "notes": list(self.notes), "findings": [f.__dict__ for f in self.findings]}

    def text(self) -> str:
        notes = [f"  note: {note}" for note in self.notes]
        if self.error:
            return "\n".join([f"compute-sanitizer {self.tool}: {self.error}", *notes])
        if not self.findings:
            found = self.summary or "0 errors"
            return "\n".join([f"compute-sanitizer {self.tool}: no problems found ({found})",
                              *notes])
        return "\n".join([f"compute-sanitizer {self.tool}: {self.summary}", *notes]
                         + [f"  {f.text()}" for f in self.findings])

    def html(self) -> str:
        import html as h

        return f'<pre class="gpunb-sanitizer">{h.escape(self.text())}</pre>'

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return self.text()


def parse_text(output: str, tool: str) -> SanitizerReport:
    """Findings from compute-sanitizer's text output (`--show-backtrace no` or with frames)."""
    report = SanitizerReport(tool)
    current: Finding | None = None
    folded: dict = {}

    def close():
        nonlocal current
        if current is not None:
            key = (current.what, current.file, current.line, current.other_line)
            if key in folded:
                folded[key].count += 1
            else:
                folded[key] = current
        current = None

    for raw in output.splitlines():
        if not raw.startswith("="):
            continue
        line = _PREFIX.sub("", raw).strip()
        summary = _SUMMARY.search(line)
        if summary:
            close()
            if not report.summary:
                report.summary = f"{summary.group(1).lower()} summary: {summary.group(2)}"
            continue
        hazard = _HAZARD.search(line)
        if hazard and "hazard" in line:
            close()
            block = _BLOCK.search(line)
            current = Finding(tool, f"{hazard.group(1)} hazard",
                              block=block.group(1) if block else "")
            continue
        if line.startswith(_STARTS) \
                and "Host Frame" not in line:
            close()
            current = Finding(tool, line.rstrip(":").strip())
            continue
        if current is None:
            continue
        side = _RACE_SIDE.search(line)
        if side:
            kind, thread, kernel, _, file, number = side.groups()
            if current.line is None:
                current.kernel, current.file, current.line = kernel, file, int(number)
                current.thread = thread
                current.detail = f"{kind.lower()} by thread ({thread})"
            else:
                current.other_line = int(number)
                current.detail += f"; {kind.lower()} by thread ({thread}) at line {number}"
            continue
        at = _AT.search(line)
        if at and current.line is None and "Host Frame" not in line:
            current.kernel, current.file, current.line = at.group(1), at.group(3), int(at.group(4))
            continue
        thread = _THREAD.search(line)
        if thread:
            current.thread, current.block = thread.group(1), thread.group(2)
            continue
        if line.startswith(("Access to", "Address ", "and is")) and not current.detail:
            current.detail = line
    close()
    findings = list(folded.values())
    in_kernels = [f for f in findings if f.line is not None]
    # "Program hit CUDA_ERROR_LAUNCH_FAILED on cuCtxSynchronize": the host side of a kernel
    # fault already reported at its line; kept only when it is all there is
    report.findings = in_kernels or findings
    return report


def sanitizer_options(tool: str, shared_initcheck: bool = True) -> list:
    """compute-sanitizer's options for `tool` (before the child's command line): one line per
    finding without host backtraces, every finding printed, racecheck's per-hazard reports and
    initcheck on shared memory as well as global memory."""
    if tool not in TOOLS:
        raise tools.ReplayError(f"--sanitize {tool}: expected one of {', '.join(TOOLS)}")
    argv = ["--tool", tool, "--show-backtrace", "no", "--print-limit", "1000"]
    if tool == "racecheck":
        argv += ["--racecheck-report", "hazard"]
    if tool == "initcheck" and shared_initcheck:
        argv += ["--initcheck-address-space", "all"]
    return argv


def sanitizer_command(directory: Path, tool: str, sanitizer: str = "compute-sanitizer",
                      shared_initcheck: bool = True) -> list:
    """The whole command line: compute-sanitizer, its options, then the replay child."""
    return [sanitizer, *sanitizer_options(tool, shared_initcheck),
            *tools.replay_command(directory)]


def run_sanitizer(directory: Path, tool: str, timeout: float = 300.0) -> SanitizerReport:
    """Replay the snapshot in `directory` under compute-sanitizer --tool TOOL."""
    sanitizer_options(tool)  # an unknown tool fails before the tool is looked for
    sanitizer = tools.require_tool("compute-sanitizer")
    proc = tools.run_tool(sanitizer_command(directory, tool, sanitizer), "compute-sanitizer",
                          timeout)
    output = proc.stdout + "\n" + proc.stderr
    notes = []
    if tool == "initcheck" and _UNKNOWN_OPTION.search(output):
        notes.append("this compute-sanitizer checks global memory only (shared memory needs "
                     "compute-sanitizer 2025.4 or later: pip install -U "
                     "nvidia-cuda-sanitizer-api)")
        proc = tools.run_tool(sanitizer_command(directory, tool, sanitizer, False),
                              "compute-sanitizer", timeout)
        output = proc.stdout + "\n" + proc.stderr
    (directory / f"sanitizer_{tool}.txt").write_text(output)
    report = parse_text(output, tool)
    report.notes = notes
    failed = _REPLAY_FAILED.search(output)
    if failed and not report.findings:  # a launch that failed for no reason the tool reports
        report.error = failed.group(0).strip()
    elif failed:
        report.notes.append(failed.group(0).strip())
    if not report.summary and proc.returncode not in (0, 3):
        report.error = tools.last_error_line(output)
    return report
