"""The CPU target's debug variant: line checks, shadow copies of variables, debugger events.

Compiled in only when a kernel calls breakpoint() or a launch asks for the debugger (the
`debugger` option); every other kernel is compiled without any of it. The variant is the same
lowered code plus, in the kernel's body (device functions are inlined into it):

- before each statement (and at the top of each loop iteration) a *line check*: the thread's
  current line site is stored in its debug area, and when that site is armed (a breakpoint) or
  the debugger asked for more (stepping, pausing, tracing, abandoning the launch) a cold helper
  decides whether to call the debugger's hook, which may stop the thread there;
- after each definition of a variable, a copy of its value in the thread's debug area, and the
  number of the SSA definition that the name now holds (numba types each definition apart), so
  the debugger shows the values and types the compiled code computed;
- events at breakpoint(), barriers, errors, raises and the thread's end.

Recursive device functions are real calls (not inlined): their bodies get no checks, so the
debugger steps over such a call. The tables this builds (line sites, and per inlined body its
variables' layout) go into the artifact (`debug_sites`, `debug_frames`, `debug_area`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.backends.cpu import debug_abi as dbg
from gpunb.compiler import datamodel as dm
from gpunb.compiler.ir_functions import declare, new_function
from gpunb.compiler.values import is_compile_time
from gpunb.foundation import types as t


def _at(b: ir.IRBuilder, base, offset):
    off = offset if isinstance(offset, ir.Value) else ir.Constant(dm.i64, offset)
    return b.gep(base, [off], source_etype=dm.i8)


def _i32(v: int):
    return ir.Constant(dm.i32, v)


def _align(offset: int, alignment: int) -> int:
    return (offset + alignment - 1) // alignment * alignment


# ---- where a value's parts go in the debug area -------------------------------------------------


def plan_value(ty: t.Type, offset: int, path: tuple, stores: list) -> tuple:
    """(layout, next offset) for a value of `ty` stored from `offset`; appends the stores
    (extract path, conversion, offset) that write it. The layout is JSON data the debugger
    decodes: ["s", type, off] a scalar, ["a", dtype, ndim, off, layout] an array view,
    ["t", [items]] a tuple, ["r", descr, off] a record reference, ["?", type] not shown."""
    if isinstance(ty, t.Boolean):
        stores.append((path, "bool", offset))
        return ["s", "bool", offset], offset + 1
    if isinstance(ty, (t.Integer, t.Float, t.Complex, t.BFloat16, t.FP8)):
        size = t.sizeof(ty)
        unit = size // 2 if isinstance(ty, t.Complex) else size
        offset = _align(offset, min(unit, 8))
        stores.append((path, "bits16" if isinstance(ty, t.BFloat16) else "raw", offset))
        return ["s", str(ty), offset], offset + size
    if isinstance(ty, t.Array):
        offset = _align(offset, 8)
        stores.append((path, "raw", offset))
        return ["a", element_layout(ty.dtype), ty.ndim, offset, ty.layout], \
            offset + 8 * (1 + 2 * ty.ndim)
    if isinstance(ty, t.Tuple):
        items = []
        for k, item in enumerate(ty.items):
            layout, offset = plan_value(item, offset, path + (k,), stores)
            items.append(layout)
        return ["t", items], offset
    if isinstance(ty, t.Record):
        offset = _align(offset, 8)
        stores.append((path, "raw", offset))
        return ["r", element_layout(ty), offset], offset + 8
    return ["?", str(ty)], offset


def element_layout(ty: t.Type):
    """An array element's (or record's) type for the debugger: a scalar type's name, or
    ["record", numpy descr] for a record."""
    if isinstance(ty, t.Record):
        import numpy as np

        return ["record", np.lib.format.dtype_to_descr(t.to_dtype(ty))]
    return str(ty)


def _variable_name(name: str) -> bool:
    return name.isidentifier()


@dataclass
class Instance:
    """One lowered body in the kernel's function: the kernel's own, or an inlined call's."""

    index: int
    function: str
    call_file: str  # where the call that inlined it is ("" for the kernel)
    call_line: int
    parent: int  # instance index, -1 for the kernel
    depth: int
    names: dict = field(default_factory=dict)  # name -> offset of its i32 "current definition"
    var_index: dict = field(default_factory=dict)  # Var -> index into `variables`
    variables: list = field(default_factory=list)  # (name, type, kind, layout, stores)
    names_start: int = 0
    names_bytes: int = 0

    def table(self) -> tuple:
        return (self.call_file, self.call_line, self.function, self.parent, self.depth,
                tuple(sorted(self.names.items())),
                tuple((name, ty, kind, layout) for name, ty, kind, layout, _ in self.variables))


class DebugInstrumentation:
    """Builds one kernel's debug variant (see the module docstring); owned by its CpuTarget."""

    def __init__(self, target):
        self.target = target
        self.sites: list = [("", 0, 0, -1)]  # site 0: none
        self.instances: list[Instance] = []
        self.by_lowerer: dict = {}  # id(lowerer) -> (lowerer, Instance)
        self.statement_sites: dict = {}  # (instance, id(node)) -> site
        self.current_site: dict = {}  # instance index -> site of the statement being lowered
        self.area_bytes = dbg.H_BYTES
        self.area = None  # this thread's debug area (an SSA value of the kernel's body)

    # ---- layout --------------------------------------------------------------------------------

    def _allocate(self, nbytes: int, alignment: int) -> int:
        start = _align(self.area_bytes, alignment)
        self.area_bytes = start + nbytes
        return start

    def _new_instance(self, low, parent: Instance | None) -> Instance:
        typed = low.typed
        inst = Instance(len(self.instances), typed.name, "", 0,
                        -1 if parent is None else parent.index,
                        0 if parent is None else parent.depth + 1)
        variables = [(var, vt) for var, vt in typed.var_types.items()
                     if vt is not None and not isinstance(vt, t.NoneType)
                     and not is_compile_time(vt) and _variable_name(var.name)]
        names = sorted({var.name for var, _ in variables})
        inst.names_start = self._allocate(4 * len(names), 4)
        inst.names_bytes = 4 * len(names)
        inst.names = {name: inst.names_start + 4 * k for k, name in enumerate(names)}
        for var, vt in variables:
            stores: list = []
            start = _align(self.area_bytes, 8)
            layout, end = plan_value(vt, start, (), stores)
            self.area_bytes = end
            inst.var_index[var] = len(inst.variables)
            inst.variables.append((var.name, str(vt), var.kind.value, layout, stores))
        self.instances.append(inst)
        self.by_lowerer[id(low)] = (low, inst)
        return inst

    def instance(self, low) -> Instance | None:
        """The instance `low` lowers, or None outside the kernel's body (a real call)."""
        if low.fn is not self.target.body or self.area is None:
            return None
        found = self.by_lowerer.get(id(low))
        if found is not None:
            return found[1]
        return self._new_instance(low, None)

    def _site(self, inst: Instance, low, node) -> int:
        key = (inst.index, id(node))
        site = self.statement_sites.get(key)
        if site is None:
            site = len(self.sites)
            self.sites.append((low.typed.source.filename, node.lineno, node.col_offset,
                               inst.index))
            self.statement_sites[key] = site
        return site

    def tables(self) -> tuple:
        """(debug_sites, debug_frames, debug_area) for the artifact."""
        return (tuple(self.sites), tuple(inst.table() for inst in self.instances),
                _align(self.area_bytes, 16))

    # ---- emission ------------------------------------------------------------------------------

    def start(self, low) -> None:
        """Kernel prologue: fill this thread's debug area header; keep its address."""
        b = low.builder
        b.call(start_function(low.mb.module), [low.ctx])
        self.area = b.load(_at(b, low.ctx, abi.CTX_DEBUG_AREA), typ=dm.ptr)
        self._new_instance(low, None)

    def _event(self, low, event: int, site, abort_ends: bool = True) -> None:
        """Call the event helper; a nonzero answer ends the thread (the launch is abandoned)."""
        b = low.builder
        answer = b.call(event_function(low.mb.module), [low.ctx, _i32(event), site])
        if not abort_ends:
            return
        cont = low.fn.append_basic_block("debug.go")
        branch = b.cbranch(b.icmp_signed("!=", answer, _i32(0)), low.mb.kernel_exit, cont)
        branch.set_weights([1, 1000])
        b.position_at_end(cont)

    def _checked(self, low, condition, event: int, site, abort_ends: bool = True) -> None:
        """if condition: the event (cold)."""
        b = low.builder
        slow = low.fn.append_basic_block("debug.slow")
        cont = low.fn.append_basic_block("debug.cont")
        branch = b.cbranch(condition, slow, cont)
        branch.set_weights([1, 1000])
        b.position_at_end(slow)
        self._event(low, event, site, abort_ends)
        if not b.block.is_terminated:
            b.branch(cont)
        b.position_at_end(cont)

    def _wanted(self, low, site: int | None):
        """The line check's test: the site is armed, the debugger wants every check, or the
        launch was told to stop (Ctrl-C, the watchdog: the helper makes that a pause)."""
        b = low.builder
        control = b.load(_at(b, self.area, dbg.H_CONTROL), typ=dm.ptr)
        wanted = b.load_atomic(_at(b, control, dbg.CONTROL_OFFSETS["any"]), "monotonic", 4,
                               typ=dm.i32)
        cancel = b.load(_at(b, low.ctx, abi.CTX_CANCEL), typ=dm.ptr)
        wanted = b.or_(wanted, b.load_atomic(cancel, "monotonic", 4, typ=dm.i32))
        if site is not None:
            armed = b.load(_at(b, control, dbg.CONTROL_OFFSETS["armed"]), typ=dm.ptr)
            flag = b.load(_at(b, armed, site), typ=dm.i8)
            wanted = b.or_(wanted, b.zext(flag, dm.i32))
        return b.icmp_signed("!=", wanted, _i32(0))

    def line(self, low, node) -> None:
        inst = self.instance(low)
        if inst is None:
            return
        site = self._site(inst, low, node)
        self.current_site[inst.index] = site
        b = low.builder
        b.store(_i32(site), _at(b, self.area, dbg.H_SITE))
        self._checked(low, self._wanted(low, site), dbg.EV_LINE, _i32(site))

    def define(self, low, var, value) -> None:
        inst = self.instance(low)
        if inst is None:
            return
        index = inst.var_index.get(var)
        if index is None:
            return
        name, _, _, _, stores = inst.variables[index]
        self._store(low.builder, value, stores)
        b = low.builder
        b.store(_i32(index + 1), _at(b, self.area, inst.names[name]))

    def _store(self, b: ir.IRBuilder, value, stores: list) -> None:
        for path, conversion, offset in stores:
            part = b.extract_value(value, list(path)) if path else value
            if conversion == "bool":
                part = b.zext(part, dm.i8)
            elif conversion == "bits16":
                part = b.bitcast(part, ir.IntType(16))
            b.store(part, _at(b, self.area, offset))

    def join(self, low, node, kind) -> None:
        """Phis defined here hold their values now: copy them (a name not yet defined on the
        path taken stays undefined); at a loop's header, the line check of its statement."""
        inst = self.instance(low)
        if inst is None:
            return
        b = low.builder
        for phi in low.typed.joins.get((node, kind), ()):
            index = inst.var_index.get(phi)
            if index is None or low.slot(phi) is None:
                continue
            name, _, _, _, stores = inst.variables[index]
            self._store(b, low.load_var(phi), stores)
            slot = _at(b, self.area, inst.names[name])
            defined = b.icmp_signed("!=", b.load(slot, typ=dm.i32), _i32(0))
            b.store(b.select(defined, _i32(index + 1), _i32(0)), slot)
        if kind.value == "header" and isinstance(node, (ast.For, ast.While)):
            self.line(low, node)

    def inline(self, caller, inner) -> None:
        parent = self.instance(caller)
        if parent is None:
            return
        inst = self._new_instance(inner, parent)
        inst.call_line = caller.current_line
        inst.call_file = caller.typed.source.filename
        if inst.names_bytes:  # a fresh call: no name of the callee holds a value yet
            b = caller.builder
            memset = low_memset(caller.mb.module)
            b.call(memset, [_at(b, self.area, inst.names_start), ir.Constant(dm.i8, 0),
                            ir.Constant(dm.i64, inst.names_bytes), ir.Constant(dm.i1, 0)])

    def returned(self, caller, inner) -> None:
        """Back in the caller: the thread is at the caller's statement again."""
        parent = self.instance(caller)
        if parent is None:
            return
        site = self.current_site.get(parent.index)
        if site is not None:
            b = caller.builder
            b.store(_i32(site), _at(b, self.area, dbg.H_SITE))

    def site_of(self, low) -> int:
        inst = self.instance(low)
        return 0 if inst is None else self.current_site.get(inst.index, 0)

    def breakpoint(self, low, node) -> None:
        if self.instance(low) is None:
            raise low.error(node, f"breakpoint() in '{low.typed.name}', which is called "
                                  "recursively: the CPU target's debugger stops in kernels and "
                                  "inlined device functions only",
                            "move the breakpoint() to the caller, or make the function "
                            "non-recursive")
        self._event(low, dbg.EV_BREAKPOINT, _i32(self.site_of(low)))

    def barrier(self, low, barrier_site: int) -> None:
        if self.instance(low) is None:
            return
        self._checked(low, self._wanted(low, None), dbg.EV_BARRIER, _i32(barrier_site))

    def error(self, low, raised: bool) -> None:
        """Just before the thread ends for an error (reported, or a silent raise)."""
        if self.instance(low) is None:
            return
        event = dbg.EV_RAISE if raised else dbg.EV_ERROR
        self._event(low, event, _i32(self.site_of(low)), abort_ends=False)

    def exit(self, low) -> None:
        """The kernel's exit: the thread is done."""
        if self.area is None:
            return
        b = low.builder
        b.store(_i32(dbg.STATE_EXITED), _at(b, self.area, dbg.H_STATE))
        # the thread ends here anyway (and the exit block is this one: no abort branch)
        last_line = b.load(_at(b, self.area, dbg.H_SITE), typ=dm.i32)
        self._checked(low, self._wanted(low, None), dbg.EV_EXIT, last_line, abort_ends=False)


def low_memset(module: ir.Module) -> ir.Function:
    return declare(module, "llvm.memset.p0.i64", dm.void, [dm.ptr, dm.i8, dm.i64, dm.i1])


# ---- generated helpers --------------------------------------------------------------------------


def start_function(module: ir.Module) -> ir.Function:
    """void gpunb_debug_start(ctx): the thread's debug area header (ids, control, traced)."""
    fn, b = new_function(module, "gpunb_debug_start", dm.void, [dm.ptr])
    if b is None:
        return fn
    ctx, = fn.args
    area = b.load(_at(b, ctx, abi.CTX_DEBUG_AREA), typ=dm.ptr)
    status = b.load(_at(b, ctx, abi.CTX_STATUS), typ=dm.ptr)
    control = b.load(_at(b, status, abi.STATUS_OFFSETS["debug"]), typ=dm.ptr)
    b.store(control, _at(b, area, dbg.H_CONTROL))
    ctaid = [b.zext(b.load(_at(b, ctx, abi.CTX_CTAID + 4 * k), typ=dm.i32), dm.i64)
             for k in range(3)]
    nctaid = [b.zext(b.load(_at(b, ctx, abi.CTX_NCTAID + 4 * k), typ=dm.i32), dm.i64)
              for k in range(3)]
    ntid = [b.zext(b.load(_at(b, ctx, abi.CTX_NTID + 4 * k), typ=dm.i32), dm.i64)
            for k in range(3)]
    block = b.add(ctaid[0], b.mul(nctaid[0], b.add(ctaid[1], b.mul(nctaid[1], ctaid[2]))))
    tid = b.load(_at(b, ctx, abi.CTX_LINEAR), typ=dm.i32)
    per_block = b.mul(b.mul(ntid[0], ntid[1]), ntid[2])
    global_index = b.add(b.mul(block, per_block), b.zext(tid, dm.i64))
    b.store(tid, _at(b, area, dbg.H_TID))
    b.store(block, _at(b, area, dbg.H_BLOCK))
    b.store(global_index, _at(b, area, dbg.H_GLOBAL))
    b.store(_i32(dbg.STATE_RUNNING), _at(b, area, dbg.H_STATE))
    # traced: global_index in one of the [lo, hi) ranges
    co = dbg.CONTROL_OFFSETS
    ranges = b.load(_at(b, control, co["trace_ranges"]), typ=dm.ptr)
    count = b.load(_at(b, control, co["n_trace_ranges"]), typ=dm.i64)
    traced = b.alloca(dm.i32)
    b.store(_i32(0), traced)
    from gpunb.backends.cpu.runner import _loop

    with _loop(b, ir.Constant(dm.i64, 0), count, "trace.range") as (k, _):
        lo = b.load(b.gep(ranges, [b.mul(k, ir.Constant(dm.i64, 2))], source_etype=dm.i64),
                    typ=dm.i64)
        hi = b.load(b.gep(ranges, [b.add(b.mul(k, ir.Constant(dm.i64, 2)),
                                         ir.Constant(dm.i64, 1))], source_etype=dm.i64),
                    typ=dm.i64)
        inside = b.and_(b.icmp_signed(">=", global_index, lo),
                        b.icmp_signed("<", global_index, hi))
        b.store(b.select(inside, _i32(1), b.load(traced)), traced)
    b.store(b.load(traced), _at(b, area, dbg.H_TRACED))
    b.ret_void()
    return fn


def event_function(module: ir.Module) -> ir.Function:
    """i32 gpunb_debug_event(ctx, i32 event, i32 site): record a trace step when this thread is
    traced, and call the debugger's hook when it wants this event; nonzero: end the thread."""
    fn, b = new_function(module, "gpunb_debug_event", dm.i32, [dm.ptr, dm.i32, dm.i32],
                         cold=True)
    if b is None:
        return fn
    ctx, event, site = fn.args
    area = b.load(_at(b, ctx, abi.CTX_DEBUG_AREA), typ=dm.ptr)
    control = b.load(_at(b, area, dbg.H_CONTROL), typ=dm.ptr)
    _take_cancel(b, fn, ctx, control)
    check = _EventCheck(b, control, area, event)
    traced = b.icmp_signed("!=", b.load(_at(b, area, dbg.H_TRACED), typ=dm.i32), _i32(0))
    record = b.and_(b.and_(check.flag("tracing"), traced),
                    b.or_(check.event(dbg.EV_LINE), check.event(dbg.EV_EXIT)))
    record_bb = fn.append_basic_block("trace")
    after_bb = fn.append_basic_block("trace.done")
    b.cbranch(record, record_bb, after_bb)
    b.position_at_end(record_bb)
    _record_step(b, fn, control, area, event, site)
    b.branch(after_bb)
    b.position_at_end(after_bb)
    call_bb = fn.append_basic_block("hook")
    done_bb = fn.append_basic_block("done")
    b.cbranch(b.and_(check.wants(site), b.not_(check.flag("abort"))), call_bb, done_bb)
    b.position_at_end(call_bb)
    hook = _Callee(b.load(_at(b, control, dbg.CONTROL_OFFSETS["hook"]), typ=dm.ptr),
                   ir.FunctionType(dm.i32, [dm.ptr, dm.i32, dm.i32]))
    b.call(hook, [ctx, event, site])  # its answer is also the abort flag, read below
    b.branch(done_bb)
    b.position_at_end(done_bb)
    b.ret(b.zext(check.flag("abort"), dm.i32))
    return fn


class _EventCheck:
    """The event helper's test of whether the debugger wants an event: an armed line (in the
    filtered thread and block, for a filtered breakpoint), a pause, the focused thread's line
    while stepping, its barrier or end while stepping, breakpoint(), an error."""

    def __init__(self, b: ir.IRBuilder, control, area, event):
        self.b, self.control, self.area, self.event_value = b, control, area, event

    def flag(self, name: str):
        b = self.b
        value = b.load_atomic(_at(b, self.control, dbg.CONTROL_OFFSETS[name]), "monotonic", 4,
                              typ=dm.i32)
        return b.icmp_signed("!=", value, _i32(0))

    def field64(self, base, offset: int):
        return self.b.load(_at(self.b, base, offset), typ=dm.i64)

    def event(self, kind: int):
        return self.b.icmp_signed("==", self.event_value, _i32(kind))

    def matches(self, limit: str, value):
        b = self.b
        wanted = self.field64(self.control, dbg.CONTROL_OFFSETS[limit])
        return b.or_(b.icmp_signed("<", wanted, ir.Constant(dm.i64, 0)),
                     b.icmp_signed("==", wanted, value))

    def line_stop(self, site, focused):
        b, co = self.b, dbg.CONTROL_OFFSETS
        armed = b.load(_at(b, self.control, co["armed"]), typ=dm.ptr)
        mark = b.select(self.event(dbg.EV_LINE), b.load(_at(b, armed, b.zext(site, dm.i64)),
                                                          typ=dm.i8), ir.Constant(dm.i8, 0))
        tid = b.zext(b.load(_at(b, self.area, dbg.H_TID), typ=dm.i32), dm.i64)
        block = self.field64(self.area, dbg.H_BLOCK)
        filtered = b.and_(b.icmp_signed("==", mark, ir.Constant(dm.i8, dbg.ARMED_FILTERED)),
                          b.and_(self.matches("filter_tid", tid),
                                 self.matches("filter_block", block)))
        armed_here = b.or_(b.icmp_signed("==", mark, ir.Constant(dm.i8, dbg.ARMED_ALL)),
                           filtered)
        return b.or_(armed_here, b.or_(self.flag("pause"), b.and_(self.flag("step"), focused)))

    def wants(self, site):
        b, co = self.b, dbg.CONTROL_OFFSETS
        focused = b.icmp_signed("==", self.field64(self.control, co["focus"]),
                                self.field64(self.area, dbg.H_GLOBAL))
        stepping = b.and_(b.or_(self.flag("step"), self.flag("barrier_step")), focused)
        wants = b.or_(b.and_(self.event(dbg.EV_LINE), self.line_stop(site, focused)),
                      b.and_(self.event(dbg.EV_BREAKPOINT), self.flag("breakpoints")))
        wants = b.or_(wants, b.and_(b.or_(self.event(dbg.EV_BARRIER),
                                          self.event(dbg.EV_EXIT)), stepping))
        return b.or_(wants, b.and_(b.or_(self.event(dbg.EV_ERROR), self.event(dbg.EV_RAISE)),
                                   self.flag("stop_on_error")))


def _take_cancel(b: ir.IRBuilder, fn, ctx, control) -> None:
    """A launch under the debugger is not abandoned by Ctrl-C or the watchdog where the runner
    polls (its variant has no stopping points of its own, guard.py's cancel word reaches it
    here): an interrupt becomes a pause at this line (DebugControl.pause = PAUSE_INTERRUPT), a
    timeout a PAUSE_TIMEOUT the debugger ends the launch with, naming this line (the watchdog
    counts only the time the launch ran: monitor.py). The word is cleared for both."""
    cancel = b.load(_at(b, ctx, abi.CTX_CANCEL), typ=dm.ptr)
    why = b.load_atomic(cancel, "monotonic", 4, typ=dm.i32)
    take_bb = fn.append_basic_block("cancel.take")
    done_bb = fn.append_basic_block("cancel.done")
    stopping = b.or_(b.icmp_signed("==", why, _i32(abi.CANCEL_INTERRUPT)),
                     b.icmp_signed("==", why, _i32(abi.CANCEL_TIMEOUT)))
    b.cbranch(stopping, take_bb, done_bb)
    b.position_at_end(take_bb)
    b.cmpxchg(cancel, why, _i32(abi.CANCEL_NONE), "monotonic", "monotonic")
    pause = _at(b, control, dbg.CONTROL_OFFSETS["pause"])
    interrupted = b.icmp_signed("==", why, _i32(abi.CANCEL_INTERRUPT))
    b.store(b.select(interrupted, _i32(dbg.PAUSE_INTERRUPT), _i32(dbg.PAUSE_TIMEOUT)), pause)
    b.branch(done_bb)
    b.position_at_end(done_bb)


class _Callee:
    """A function pointer held in a value, as llvmlite's call wants it: with opaque pointers
    the value itself does not say the function's type."""

    def __init__(self, value, function_type: ir.FunctionType):
        self.value, self.function_type, self.type = value, function_type, value.type

    def get_reference(self) -> str:
        return self.value.get_reference()


def _record_step(b: ir.IRBuilder, fn, control, area, event, site) -> None:
    """Append [global, site, event, the thread's debug area] to the trace buffer (dropped
    when it is full; trace_len then says how much was asked for)."""
    co = dbg.CONTROL_OFFSETS
    size = b.load(_at(b, control, co["area_bytes"]), typ=dm.i64)
    record_bytes = b.add(size, ir.Constant(dm.i64, dbg.TRACE_HEADER))
    start = b.atomic_rmw("add", _at(b, control, co["trace_len"]), record_bytes, "monotonic")
    fits = b.icmp_signed("<=", b.add(start, record_bytes),
                         b.load(_at(b, control, co["trace_cap"]), typ=dm.i64))
    write_bb = fn.append_basic_block("trace.write")
    skip_bb = fn.append_basic_block("trace.full")
    b.cbranch(fits, write_bb, skip_bb)
    b.position_at_end(write_bb)
    buffer = b.load(_at(b, control, co["trace_buf"]), typ=dm.ptr)
    rec = _at(b, buffer, start)
    b.store(b.load(_at(b, area, dbg.H_GLOBAL), typ=dm.i64), rec)
    b.store(site, _at(b, rec, 8))
    b.store(event, _at(b, rec, 12))
    memcpy = fn.module.globals.get("llvm.memcpy.p0.p0.i64") or ir.Function(
        fn.module, ir.FunctionType(dm.void, [dm.ptr, dm.ptr, dm.i64, dm.i1]),
        "llvm.memcpy.p0.p0.i64")
    b.call(memcpy, [_at(b, rec, dbg.TRACE_HEADER), area, size, ir.Constant(dm.i1, 0)])
    b.branch(skip_bb)
    b.position_at_end(skip_bb)
