"""Who writes in the cache directory: this process's identity, and temporary names that carry it.

A lock holder (keylock.py) and a writer's temporary files (files.py) are judged by the same
facts: the host, the machine (boot id and pid namespace: whether pids can be compared), the pid
and that pid's start time (which changes when a pid is reused). Kept apart from keylock so that
a disk hit, which never locks, does not import the lock machinery.
"""

from __future__ import annotations

import os
import re

from gpunb.cache.encode import blake2b

# ---- who we are ------------------------------------------------------------------------------


def host_tag() -> str:
    """This host's name, reduced to characters that are safe in a file name."""
    if hasattr(os, "uname"):  # what socket.gethostname() answers on POSIX, without importing
        hostname = os.uname().nodename  # socket (its enums cost a first compile ~3 ms)
    else:
        import socket

        hostname = socket.gethostname()
    name = re.sub(r"[^A-Za-z0-9.-]", "_", hostname or "host")
    return name[:64] or "host"


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(256).strip()
    except OSError:
        return ""


def _machine() -> str:
    """Boot id and pid namespace: two processes with equal values can see each other's pids.
    (Containers on one kernel share the boot id, not the pid namespace; two machines given one
    host name, or a node after a reboot, differ in boot id.)"""
    boot = _read_text("/proc/sys/kernel/random/boot_id")
    try:
        pidns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pidns = ""
    return f"{boot}/{pidns}"


def process_start(pid: int) -> str | None:
    """A token that changes when `pid` is reused: Linux's start time in ticks since boot.
    None when no live process has this pid (a zombie counts as gone); "" when it cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        if fields[0] in (b"Z", b"X"):  # killed but not yet reaped by its parent
            return None
        return fields[19].decode()
    except FileNotFoundError:
        return None if os.path.isdir("/proc/self") else _alive_by_signal(pid)
    except (OSError, IndexError):
        return _alive_by_signal(pid)


def _alive_by_signal(pid: int) -> str | None:
    if os.name == "nt":  # signal 0 is CTRL_C_EVENT there: never send it; cannot tell
        return ""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:
        pass  # EPERM: it exists
    return ""


_identity: dict = {}


def identity() -> dict:
    """This process as a lock holder (recomputed after a fork: the pid changed)."""
    pid = os.getpid()
    if _identity.get("pid") != pid:
        _identity.clear()
        _identity.update(host=host_tag(), machine=_machine(), pid=pid,
                         started=process_start(pid) or "")
    return dict(_identity)


# ---- temporary files: named after their writer, so a dead writer's are known at once ---------

TEMP_PREFIX = ".tmp-"


def temp_prefix() -> str:
    """`.tmp-<host>+<machine>+<pid>+<start>+`: the start of this process's temporary file names
    in the cache directory (a random part follows). '+' never occurs in a host tag."""
    me = identity()
    return f"{TEMP_PREFIX}{me['host']}+{_machine_tag(me)}+{me['pid']}+{me['started']}+"


def _machine_tag(me: dict) -> str:
    """8 hex digits naming this machine's boot and pid namespace (identity()'s `machine`)."""
    return blake2b(me["machine"].encode(), digest_size=4).hexdigest()


def temp_writer_state(name: str) -> str:
    """Whether the process that made the temporary file `name` is "dead" (proven: it ran on this
    machine - host, boot and pid namespace - and its pid is free or a newer process's), "alive"
    (on this machine), or "unknown" (another host or container, or not a name of this form)."""
    fields = name[len(TEMP_PREFIX):].split("+", 4) if name.startswith(TEMP_PREFIX) else ()
    if len(fields) != 5 or not fields[2].isdigit():
        return "unknown"
    host, machine_tag, pid, started, _ = fields
    me = identity()
    if host != me["host"] or machine_tag != _machine_tag(me):
        return "unknown"
    now = process_start(int(pid))
    if now is None or (now and started and now != started):
        return "dead"
    return "alive"


if hasattr(os, "register_at_fork"):  # a forked child has its own pid: recomputed on first use
    os.register_at_fork(after_in_child=_identity.clear)
