"""The CPU target's kernel debugger: stop, inspect, step and trace the compiled kernel.

A debug launch runs the kernel's debug variant (backends/cpu/debug_lower.py) on a worker thread;
a DebugSession (session.py) stops it where asked and reads the stopped block's threads from
memory (threads.py, values.py). Front ends drive the session: scripts and tests directly, the
terminal through pdb-style commands (terminal.py), notebooks through a widget (the notebook
layer). Traces (trace.py) record chosen threads' lines for scrubbing after the launch.
"""
