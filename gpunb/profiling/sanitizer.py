"""`--sanitize TOOL`: the snapshotted launches replayed under compute-sanitizer, its text report
parsed into findings at the kernel's source lines (the replay's cubin carries line info).

compute-sanitizer names the file's base name and line (`at race__float321+0xd0 in cell.py:5`),
the thread and block, and for races the other access; the findings keep that and the snapshot's
source files turn a base name back into the file or cell it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gpunb.profiling import tools

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
_PREFIX = re.compile(r"^=+ ?")
_AT = re.compile(r"at (\S+?)\+0x([0-9a-f]+) in (.+?):(\d+)\s*$")
_THREAD = re.compile(r"by thread \(([\d,]+)\) in block \(([\d,]+)\)")
_RACE_SIDE = re.compile(r"(Read|Write) Thread \(([\d,]+)\) at (\S+?)\+0x([0-9a-f]+) in (.+?):(\d+)")
_HAZARD = re.compile(r"(?:Error|Warning): .*?(RAW|WAR|WAW) hazard")
_BLOCK = re.compile(r"in block \(([\d,]+)\)")
_SUMMARY = re.compile(r"(ERROR|RACECHECK) SUMMARY: (.+)")


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

    @property
    def clean(self) -> bool:
        return not self.findings and not self.error

    def to_json(self) -> dict:
        return {"tool": self.tool, "summary": self.summary, "error": self.error,
                "findings": [f.__dict__ for f in self.findings]}

    def text(self) -> str:
        if self.error:
            return f"compute-sanitizer {self.tool}: {self.error}"
        if not self.findings:
            found = self.summary or "0 errors"
            return f"compute-sanitizer {self.tool}: no problems found ({found})"
        return "\n".join([f"compute-sanitizer {self.tool}: {self.summary}"]
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
        if line.startswith(("Invalid ", "Barrier error", "Uninitialized", "Divergent",
                            "Program hit", "Error:", "Warning:", "Race reported")) \
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


def run_sanitizer(directory: Path, tool: str, timeout: float = 300.0) -> SanitizerReport:
    """Replay the snapshot in `directory` under compute-sanitizer --tool TOOL."""
    if tool not in TOOLS:
        raise tools.ReplayError(f"--sanitize {tool}: expected one of {', '.join(TOOLS)}")
    sanitizer = tools.require_tool("compute-sanitizer")
    argv = [sanitizer, "--tool", tool, "--show-backtrace", "no", "--print-limit", "1000"]
    if tool == "racecheck":
        argv += ["--racecheck-report", "hazard"]
    proc = tools.run_tool([*argv, *tools.replay_command(directory)], "compute-sanitizer",
                          timeout)
    output = proc.stdout + "\n" + proc.stderr
    (directory / f"sanitizer_{tool}.txt").write_text(output)
    report = parse_text(output, tool)
    if not report.summary and proc.returncode not in (0, 3):
        report.error = tools.last_error_line(output)
    return report
