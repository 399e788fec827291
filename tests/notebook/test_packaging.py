"""The wheel carries the built JupyterLab extension where JupyterLab looks for it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _hook_class():
    pytest.importorskip("hatchling")
    spec = importlib.util.spec_from_file_location("gpunb_hatch_build",
                                                  REPO / "labextension" / "hatch_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LabextensionHook


def _run_hook(root: Path) -> dict:
    hook = _hook_class()(str(root), {}, None, None, str(root / "dist"), "wheel")
    build_data: dict = {}
    hook.initialize("standard", build_data)
    return build_data


def test_a_built_extension_is_shared_data(tmp_path):
    built = tmp_path / "gpunb" / "notebook" / "labextension"
    (built / "static").mkdir(parents=True)
    (built / "package.json").write_text("{}")
    (built / "static" / "remoteEntry.js").write_text("//")
    shared = _run_hook(tmp_path)["shared_data"]
    assert sorted(shared.values()) == [
        "share/jupyter/labextensions/gpunb-labextension/package.json",
        "share/jupyter/labextensions/gpunb-labextension/static/remoteEntry.js"]


def test_an_unbuilt_tree_still_builds(tmp_path):
    assert "shared_data" not in _run_hook(tmp_path)
