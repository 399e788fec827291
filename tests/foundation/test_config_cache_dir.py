"""config.cache_dir() without GPUNB_CACHE_DIR: the Linux fast path gives platformdirs' answer."""

from __future__ import annotations

import pathlib
import sys

import platformdirs
import pytest

from gpunb.foundation import config

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's rule")


def _platformdirs() -> str:
    return platformdirs.user_cache_dir("gpunb", appauthor=False)


@linux
@pytest.mark.parametrize("xdg, home", [
    (None, "/home/someone"),  # ~/.cache
    ("/var/tmp/xdg-cache", "/home/someone"),  # XDG_CACHE_HOME wins
    ("relative/cache", "/home/someone"),  # a relative XDG_CACHE_HOME is ignored
    ("", "/home/someone"),
])
def test_cache_dir_matches_platformdirs(monkeypatch, xdg, home):
    monkeypatch.delenv("GPUNB_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", home)
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert config._linux_user_cache_dir() is not None
    assert config.cache_dir() == _platformdirs()


@linux
def test_relative_home_falls_back_to_platformdirs(monkeypatch):
    monkeypatch.delenv("GPUNB_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "not/absolute")
    assert config._linux_user_cache_dir() is None


def test_explicit_dir_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUNB_CACHE_DIR", str(tmp_path / "here"))
    assert config.cache_dir() == str(tmp_path / "here")


def test_unknown_users_home_is_not_made_in_the_working_directory(monkeypatch, tmp_path):
    """GPUNB_CACHE_DIR="~nosuchuser/x": expanduser leaves it as it is, and abspath made a
    "~nosuchuser" folder in the current directory; now a warning and the default directory."""
    from gpunb.foundation.user_warnings import CacheDirWarning

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUNB_CACHE_DIR", "~gpunb-no-such-user-x/cache")
    with pytest.warns(CacheDirWarning, match="home directory that does not exist"):
        found = config.cache_dir()
    assert found == config._default_cache_dir()
    assert "~" not in found and not list(tmp_path.iterdir())
    monkeypatch.setenv("GPUNB_CACHE_DIR", "~/gpunb-test-cache")  # the user's own ~ still works
    assert config.cache_dir() == str(pathlib.Path.home() / "gpunb-test-cache")
