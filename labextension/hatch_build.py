"""Hatch build hook: put the built JupyterLab extension where JupyterLab finds it.

JupyterLab loads prebuilt extensions from `share/jupyter/labextensions/<name>/`. When
`gpunb/notebook/labextension/` holds a build, the wheel maps it there (as shared data); when it does
not (a tree where `npm run build` was not run), the wheel is built without it instead of failing,
so `pip install -e .` works on a fresh clone.
"""

from __future__ import annotations

from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

NAME = "gpunb-labextension"


class LabextensionHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        built = Path(self.root) / "gpunb" / "notebook" / "labextension"
        if not (built / "package.json").is_file():
            return
        shared = build_data.setdefault("shared_data", {})
        for path in built.rglob("*"):
            if path.is_file():
                relative = path.relative_to(built).as_posix()
                shared[str(path)] = f"share/jupyter/labextensions/{NAME}/{relative}"
