"""Put the built JupyterLab extension where JupyterLab looks: share/jupyter/labextensions.

`npm run build` in labextension/ writes the prebuilt extension to gpunb/notebook/labextension/;
a wheel ships it as shared data, and a source checkout links it with
`python -m gpunb.notebook.labext install` (used by the browser test and by developers).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

NAME = "gpunb-labextension"


def built_path() -> Path:
    """Where `npm run build` put the prebuilt extension (inside this package)."""
    return Path(__file__).with_name("labextension")


def is_built() -> bool:
    return (built_path() / "package.json").is_file() and (built_path() / "static").is_dir()


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
