"""Toolchain identity: stamped on disk so a disk hit in a new process asks no tool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpunb.cache import toolchain_id

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from gpunb.cache.toolchain_id import toolchain_identity
ident = toolchain_identity(sys.argv[1], sys.argv[2])
print(json.dumps({"identity": ident, "llvmlite": "llvmlite.binding" in sys.modules,
                  "toolchain": "gpunb.backends.cuda.toolchain" in sys.modules}))
"""


def _probe(target: str, directory) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, target, str(directory)], check=True,
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO))).stdout
    return json.loads(out)


def test_identity_parts_match_the_tools(tmp_path):
    from gpunb.backends.cuda import toolchain

    ident = toolchain_id.toolchain_identity("cuda", str(tmp_path / "c"))
    assert ident["llvm"] == toolchain.llvm_version()
    assert ident["libdevice"] == toolchain.libdevice_hash()
    assert ident["gpunb"] and len(ident["compiler"]) == 24
    assert "libdevice" not in toolchain_id.toolchain_identity("cpu", str(tmp_path / "c"))


def test_second_process_reads_the_stamp_and_imports_no_tool(tmp_path):
    first = _probe("cuda", tmp_path)
    assert (tmp_path / "toolchain.json").exists()
    second = _probe("cuda", tmp_path)
    assert second["identity"] == first["identity"]
    assert not second["llvmlite"] and not second["toolchain"]


def test_a_stale_stamp_asks_again(tmp_path):
    first = _probe("cpu", tmp_path)
    stamp = json.loads((tmp_path / "toolchain.json").read_text())
    stamp["llvm"]["stat"][1] += 1  # as if llvmlite's library had been replaced
    stamp["llvm"]["value"] = "stale"
    stamp["compiler"]["value"] = "stale"
    stamp["compiler"]["stat"][0][1] += 1
    (tmp_path / "toolchain.json").write_text(json.dumps(stamp))
    again = _probe("cpu", tmp_path)
    assert again["identity"] == first["identity"] and again["llvmlite"]


def test_host_arch_names_cpu_and_features():
    triple, cpu, features = toolchain_id.host_arch().split("/")
    assert "-" in triple and cpu and len(features) == 12


def test_stamp_rewritten_only_when_a_fact_was_asked_again(tmp_path):
    _probe("cuda", tmp_path)
    path = tmp_path / "toolchain.json"
    os.utime(path, ns=(1, 1))  # a rewrite would move the mtime
    _probe("cuda", tmp_path)
    assert path.stat().st_mtime_ns == 1
    stamp = json.loads(path.read_text())
    stamp["llvm"]["stat"][1] += 1
    path.write_text(json.dumps(stamp))
    os.utime(path, ns=(1, 1))
    _probe("cuda", tmp_path)
    assert path.stat().st_mtime_ns != 1
    assert json.loads(path.read_text())["llvm"]["stat"][1] == stamp["llvm"]["stat"][1] - 1
