"""The JupyterLab extension's bundle: where it is, whether it matches its sources, whether
JupyterLab will find it.

`npm run build` in labextension/ writes the prebuilt extension to gpunb/notebook/labextension/,
which is kept in the repository, so wheels and editable installs carry it (as shared data, to
`share/jupyter/labextensions/`) without node on the user's machine. `build-info.json` beside it
holds a digest of the sources it was built from (`source_digest` computes the same) and the
JupyterLab it was built against. `python -m gpunb.notebook.labext install` links the bundle into
an environment (the browser test, developers); `panel_notice()` is the one line a notebook user
gets when the side panel cannot appear.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

NAME = "gpunb-labextension"
# what the bundle is made from, relative to labextension/ (scripts/build.mjs hashes the same)
SOURCES = ("package.json", "package-lock.json", "tsconfig.json", "scripts", "src", "style")
INSTALL_HINT = "pip install 'gpunb[lab]' and start it with `jupyter lab`"


def built_path() -> Path:
    """Where `npm run build` put the prebuilt extension (inside this package)."""
    return Path(__file__).with_name("labextension")


def is_built() -> bool:
    return (built_path() / "package.json").is_file() and (built_path() / "static").is_dir()


def build_info() -> dict:
    """What build-info.json says: {"sources_sha256": ..., "jupyterlab": "4.6.6"} ({} if none)."""
    try:
        return json.loads((built_path() / "build-info.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def source_digest(labextension_dir: Path) -> str:
    """sha256 of the extension's sources (SOURCES, paths sorted, CRLF as LF), as build.mjs
    computes it when it builds."""
    paths = []
    for name in SOURCES:
        top = labextension_dir / name
        found = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        paths.extend(p.relative_to(labextension_dir).as_posix() for p in found)
    digest = hashlib.sha256()
    for path in sorted(paths):
        text = (labextension_dir / path).read_text(encoding="utf-8").replace("\r\n", "\n")
        digest.update(f"{path}\0{text}\0".encode())
    return digest.hexdigest()


def found_by_jupyterlab() -> bool:
    """Whether JupyterLab started from this environment finds the extension (a
    `labextensions/gpunb-labextension` folder on its data path)."""
    try:
        from jupyter_core.paths import jupyter_path
    except ImportError:
        return False
    return any((Path(p) / NAME / "package.json").is_file() for p in jupyter_path("labextensions"))


def panel_notice() -> str | None:
    """One line for a notebook user who will not see the side panel, saying how to get it;
    None when JupyterLab and the extension are both installed here."""
    import importlib.util

    if importlib.util.find_spec("jupyterlab") is None:
        return ("gpunb: kernels, cache events and profiles also show in a JupyterLab side panel: "
                f"{INSTALL_HINT}")
    if not found_by_jupyterlab():
        return ("gpunb: JupyterLab is installed but not gpunb's side panel; reinstall gpunb "
                "(pip install -e '.[lab]' in a clone) or run `python -m gpunb.notebook.labext "
                "install`, then reload the page")
    return None


def install(prefix: str | None = None, symlink: bool = True) -> Path:
    """Link (or copy) the built extension into `<prefix>/share/jupyter/labextensions/`."""
    if not is_built():
        raise FileNotFoundError(f"{built_path()} has no built extension; run `npm ci && npm run "
                                "build` in labextension/ first")
    dest = Path(prefix or sys.prefix) / "share" / "jupyter" / "labextensions" / NAME
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_symlink() or dest.is_file():
        dest.unlink()
    elif dest.is_dir():
        shutil.rmtree(dest)
    if symlink:
        os.symlink(built_path(), dest, target_is_directory=True)
    else:
        shutil.copytree(built_path(), dest)
    return dest


def _jupyter_labextension_paths() -> list[dict]:
    """The hook `jupyter labextension develop` reads."""
    return [{"src": str(built_path()), "dest": NAME}]


def main(argv: list[str]) -> int:
    if argv[:1] != ["install"]:
        print("usage: python -m gpunb.notebook.labext install [--copy] [--prefix DIR]")
        return 2
    prefix = argv[argv.index("--prefix") + 1] if "--prefix" in argv else None
    dest = install(prefix, symlink="--copy" not in argv)
    print(f"installed {NAME} at {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
