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


def test_the_committed_bundle_was_built_from_these_sources():
    """The built extension is kept in the repository (so pip installs need no node); it must be
    the build of the sources beside it. CI also rebuilds it and compares byte for byte."""
    from gpunb.notebook import labext

    assert labext.is_built(), "gpunb/notebook/labextension/ holds no built extension"
    info = labext.build_info()
    assert info.get("jupyterlab", "").startswith("4."), info
    assert info.get("sources_sha256") == labext.source_digest(REPO / "labextension"), (
        "labextension/ changed since gpunb/notebook/labextension/ was built: run `npm ci && "
        "npm run build` in labextension/ and commit the result")
    import json

    built = json.loads((labext.built_path() / "package.json").read_text())
    source = json.loads((REPO / "labextension" / "package.json").read_text())
    load = built["jupyterlab"].pop("_build")["load"]
    assert built == source and (labext.built_path() / load).is_file()


def _tracked_tree(tmp_path: Path) -> Path:
    """The repository's tracked files (what a clean clone has), copied to a temporary folder."""
    import shutil
    import subprocess

    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    clone = tmp_path / "clone"
    for name in listed.stdout.decode().split("\0"):
        if name and (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    return clone


@pytest.mark.parametrize("version", ["standard", "editable"])
def test_a_wheel_of_a_clean_clone_carries_the_extension(tmp_path, version):
    """`pip wheel .` and `pip install -e .` of a fresh clone (no node, no npm run build) put
    the extension where JupyterLab looks: share/jupyter/labextensions/gpunb-labextension."""
    import subprocess
    import sys
    import zipfile

    pytest.importorskip("hatchling")
    if version == "editable":
        pytest.importorskip("editables")  # what hatchling's editable wheels are made with
    clone = _tracked_tree(tmp_path)
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", f"wheel:{version}",
                    "-d", str(out)], cwd=clone, check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    prefix = "gpunb-0.1.0.data/data/share/jupyter/labextensions/gpunb-labextension/"
    shared = [n[len(prefix):] for n in names if n.startswith(prefix)]
    assert "package.json" in shared and "build-info.json" in shared
    assert any(n.startswith("static/remoteEntry.") for n in shared), shared


def test_a_notebook_without_the_panel_gets_one_line_saying_how(monkeypatch, tmp_path):
    import importlib.util

    from gpunb.notebook import labext

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jupyterlab" else real(name, *a))
    line = labext.panel_notice()
    assert line.startswith("gpunb: ") and "pip install 'gpunb[lab]'" in line
    assert "jupyter lab" in line and "\n" not in line
    monkeypatch.setattr(importlib.util, "find_spec", real)
    if real("jupyterlab") is None:
        return
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))
    monkeypatch.setenv("JUPYTER_NO_CONFIG", "1")
    if not labext.found_by_jupyterlab():
        assert "python -m gpunb.notebook.labext install" in labext.panel_notice()
    labext.install(prefix=str(tmp_path))  # -> tmp/share/jupyter/labextensions/
    assert labext.found_by_jupyterlab() and labext.panel_notice() is None
