"""README's "Cache security" set-up, run as a team's admin would: its commands as written
(paths and group names renamed), then a member of the writers' group and an outsider."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_trust import ATTACKER, IS_ROOT, KEYHOLDERS, MEMBER, TEAM, as_user

from gpunb.cache import auth

REPO = Path(__file__).resolve().parents[2]


def _admin_script(root: Path) -> str:
    readme = (REPO / "README.md").read_text()
    section = readme.split("### Cache security\n", 1)[1].split("\n## ", 1)[0]
    (script,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    return (script.replace("/shared/", f"{root}/shared/")
            .replace("/etc/gpunb", f"{root}/etc/gpunb")
            .replace("gpuwriters", str(KEYHOLDERS)).replace("gputeam", str(TEAM))
            .replace("python -m", f"{sys.executable} -m"))


@pytest.mark.skipif(not IS_ROOT, reason="a team member's uid needs root (os.setuid)")
def test_readmes_shared_cache_setup_lets_members_read_the_key():
    root = Path(tempfile.mkdtemp(prefix="gpunb-readme-"))
    try:
        for folder in (root, root / "shared", root / "etc"):  # as / and /etc are: traversable
            folder.mkdir(exist_ok=True)
            os.chmod(folder, 0o755)
        done = subprocess.run(["bash", "-e", "-c", _admin_script(root)], capture_output=True,
                              text=True, env=dict(os.environ, PYTHONPATH=str(REPO)),
                              timeout=120)
        assert done.returncode == 0, done.stderr
        key_file = str(root / "etc/gpunb/cache.key")
        key_id = auth.load_key(key_file).key_id
        as_user(MEMBER, [TEAM, KEYHOLDERS], lambda: _loads_key(key_file, key_id))
        as_user(ATTACKER, [TEAM], lambda: _cannot_load_key(key_file))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _loads_key(key_file: str, key_id: str) -> None:
    assert auth.load_key(key_file).key_id == key_id


def _cannot_load_key(key_file: str) -> None:
    try:
        auth.load_key(key_file)
    except auth.Untrusted as exc:
        assert "cannot be read" in str(exc)
        return
    raise AssertionError("an outsider loaded the key")
