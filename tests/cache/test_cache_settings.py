"""Cache settings that cannot be used as given: one clear warning each, at the user's line.

Each case runs a fresh process (a script that launches a kernel on the CPU target) so that the
process's once-only warnings and its default cache directory are really the first ones.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """\
import numpy as np
from gpunb import cuda


@cuda.jit
def kern(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i


out = np.zeros(8, np.float32)
kern[1, 8](out)
kern[1, 8](out)
print("RESULT", out.tolist())
"""
LAUNCH_LINE = 13  # `kern[1, 8](out)`, the first launch: where warnings must point


def _run(tmp_path, **env_changes) -> subprocess.CompletedProcess:
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, GPUNB_TARGET="cpu", PYTHONPATH=str(REPO), PYTHONWARNINGS="default")
    for name in ("GPUNB_CACHE", "GPUNB_CACHE_DIR", "XDG_CACHE_HOME", "GPUNB_CACHE_SHARED"):
        env.pop(name, None)
    env.update(env_changes)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "RESULT [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]" in proc.stdout
    return proc


def _warnings(stderr: str, category: str) -> list[str]:
    return [line for line in stderr.splitlines() if f": {category}: " in line]


def test_an_unusable_home_is_never_created(tmp_path):
    home = tmp_path / "no-such-home"
    proc = _run(tmp_path, HOME=str(home))
    assert not home.exists()
    (warning,) = _warnings(proc.stderr, "CacheDirWarning")
    assert str(home) in warning and "GPUNB_CACHE_DIR" in warning
    assert warning.startswith(f"{tmp_path / 'user_script.py'}:{LAUNCH_LINE}: ")


def test_an_empty_cache_dir_setting_says_so_once(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    proc = _run(tmp_path, HOME=str(home), GPUNB_CACHE_DIR="")
    (warning,) = _warnings(proc.stderr, "CacheDirWarning")
    assert "GPUNB_CACHE_DIR is set but empty" in warning
    assert str(home / ".cache" / "gpunb") in warning
    assert re.match(rf"{re.escape(str(tmp_path / 'user_script.py'))}:\d+: ", warning)
    assert (home / ".cache" / "gpunb").is_dir()  # the default is used


def test_an_untrusted_cache_directory_warns_at_the_users_line(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, 0o777)
    proc = _run(tmp_path, GPUNB_CACHE_DIR=str(cache))
    (warning,) = _warnings(proc.stderr, "UntrustedCacheWarning")
    assert warning.startswith(f"{tmp_path / 'user_script.py'}:{LAUNCH_LINE}: ")
    assert "writable by everyone" in warning and f"chmod go-w {cache}" in warning
    assert os.listdir(cache) == []  # nothing read, nothing written
