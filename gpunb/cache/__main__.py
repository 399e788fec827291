"""`python -m gpunb.cache status|clear [NAME]|prune [--max-bytes N]|dir|keygen PATH` in a shell."""

from __future__ import annotations

import argparse
import sys
import time


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


def status(out=sys.stdout) -> int:
    from gpunb import cache

    store = cache.default_cache().disk
    entries = sorted(store.entries(), key=lambda e: -e.last_used)
    print(f"gpunb cache: {store.directory}", file=out)
    if not entries:
        print("(no entries)", file=out)
        return 0
    rows = [["function", "signature", "target", "size", "last used", "defined at"]]
    for e in entries:
        used = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.last_used))
        rows.append([e.function, e.signature, e.target, _size(e.size), used,
                     e.defined_at if not e.problem else _problem(e.problem)])
    print(_table(rows), file=out)
    total = sum(e.size for e in entries)
    print(f"{len(entries)} entries, {_size(total)} (cap {_size(store.max_bytes)})", file=out)
    return 0


def _problem(problem: str) -> str:
    return problem.upper() if problem.startswith("untrusted") else f"CORRUPT: {problem}"


def keygen(path: str, out=sys.stdout) -> int:
    """Write a new key for a shared cache (README: "Cache security")."""
    from gpunb.cache import auth

    try:
        key = auth.generate(path)
    except FileExistsError:
        print(f"{path} exists: gpunb never overwrites a key (remove it first to replace it)",
              file=sys.stderr)
        return 1
    except auth.Untrusted as exc:
        print(f"wrote {path}, but it cannot be used as it is: {exc}", file=sys.stderr)
        return 1
    print(f"wrote a new cache key to {path} (key id {key.key_id}, mode 0400). Give read access "
          "to those who may write entries (chgrp TEAM; chmod 0440), then set "
          f"GPUNB_CACHE_SHARED=1 GPUNB_CACHE_KEY_FILE={path}", file=out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpunb.cache",
                                     description="Inspect and maintain gpunb's kernel cache.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="table of cached kernels")
    clear = sub.add_parser("clear", help="remove all entries, or those of one function")
    clear.add_argument("name", nargs="?")
    prune = sub.add_parser("prune", help="remove least recently used entries over the size cap")
    prune.add_argument("--max-bytes", type=int, default=None)
    sub.add_parser("dir", help="print the cache directory")
    keys = sub.add_parser("keygen", help="write a new key for a shared cache")
    keys.add_argument("path")
    args = parser.parse_args(argv)
    if args.command == "keygen":
        return keygen(args.path)

    from gpunb import cache

    if args.command == "status":
        return status()
    if args.command == "clear":
        removed = cache.clear(args.name)
        print(f"removed {removed} entr{'y' if removed == 1 else 'ies'}"
              + (f" of {args.name}" if args.name else ""))
        return 0
    if args.command == "prune":
        if args.max_bytes is not None and args.max_bytes < 0:
            parser.error(f"prune --max-bytes {args.max_bytes}: a size in bytes, 0 or more")
        removed = cache.prune(args.max_bytes)
        print(f"pruned {removed} entr{'y' if removed == 1 else 'ies'}")
        return 0
    print(cache.cache_dir())
    return 0


if __name__ == "__main__":
    sys.exit(main())
