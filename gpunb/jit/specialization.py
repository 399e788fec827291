"""One compiled kernel for one target and argument types: what a launch needs, nothing more.

A plain record, kept apart from the dispatcher (which stores them) and from the slow path (which
makes them) so that each can import it without importing the other. `bind` makes the Launcher
(jit/launcher.py) of one launch configuration.
"""

from __future__ import annotations

from gpunb.jit.launcher import Launcher, bind


class Specialization:
    """A kernel compiled (or loaded from the cache) for one target and argument types.

    `launch` is the loaded program's launch method, bound once. `watch` is the identity-check
    list that says whether anything the code read was rebound since (cache/fingerprint.py).
    """

    __slots__ = ("argtypes", "artifact", "target", "backend", "packer", "program", "launch",
                 "watch", "typed", "cache_event", "compile_ms", "key", "fingerprint",
                 "type_names", "plans", "hooks", "__weakref__")

    def __init__(self, argtypes: tuple, artifact, backend, packer, program, typed=None):
        self.argtypes = argtypes
        self.artifact = artifact
        self.backend = backend
        self.target = backend.name  # "cuda" or "cpu"
        self.packer = packer
        self.program = program
        self.launch = program.launch
        self.watch = ()
        self.typed = typed  # None when loaded from the cache (types inferred on demand)
        self.cache_event = None
        self.compile_ms = 0.0
        self.key = None
        self.fingerprint = None
        self.type_names: tuple | None = None  # str of each argtype, made by the first event
        # argument kinds (type keys) -> runtime/native_pack.NativePlan, or None (not native)
        self.plans: dict = {}
        self.hooks: dict = {}  # a configuration's launch hooks (jit/launch_hooks.hooks_for)

    def bind(self, config, kinds: tuple | None, args: tuple, *, version: int, native: bool,
             previous: Launcher | None = None, hooks=None) -> Launcher:
        """The Launcher of this specialisation for `config` (kernel[grid, block, stream, ...])
        and arguments of `kinds` (their type keys; `args` are such arguments), at its
        dispatcher's launch version `version`; with a native part where `native` and one
        applies; reusing what `previous` (the configuration's last launcher) holds where it
        still applies; with `hooks` (jit/launcher.LaunchHooks) in place of the launch
        observers' when given."""
        return bind(self, config, kinds, args, version=version, native=native,
                    previous=previous, hooks=hooks)

    def __repr__(self) -> str:
        return f"<gpunb specialisation {self.artifact.name}{self.artifact.signature[4:]} " \
               f"on {self.target}>"
