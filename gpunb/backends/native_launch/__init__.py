"""All the machine code gpunb's launches run, and the memory layout it reads, in one place.

- layout.py: every structure the code reads or writes (launch plans, bindings, watch entries,
  and CPython's and numpy's object headers), declared once as ctypes structures, with the check
  of the object headers against live objects;
- plan_code.py: the plan follower, one function per process that checks a launch's arguments,
  packs them and calls cuLaunchKernel (what a native `jit.launcher.Launcher` runs);
- tensor_code.py: the follower's reading of a PyTorch tensor argument (its attributes and
  methods, through the C API: torch does not promise its C layout);
- trampoline.py: the cuLaunchKernel call the Python launch path makes (backends/cuda/launch.py);
- builtins.py: an LLVM IR function compiled by MCJIT, called from Python as a builtin.

Only `runtime/native_pack.py` (which fills plans in) and `backends/cuda/launch.py` (which calls
the trampoline) use this package, and only once llvmlite is loaded: none of it is on the path of
a process's first launch.
"""
