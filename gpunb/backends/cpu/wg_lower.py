"""Work-group loops: a block's threads as plain loops, split at barriers (as POCL and COX do).

The kernel body is called once per block. Statements between barriers form a *region*, emitted
as `for z, y, x in block: <statements>` with threadIdx as the loop counters (no memory, so LLVM
vectorises the loop over x). A barrier ends one region and starts the next. Uniform `if`,
`while` and `for range()` around barriers (wg_plan.py decides which) run once per block: their
condition is evaluated in a region by every thread into one block slot, and their bodies are
regions of their own (loop fission).

A local variable touched in more than one region (or written in one region and read in another)
lives in a per-thread array in the block's scratch buffer (allocated once per host thread and
launch by the runner, reused by each block it runs), indexed by the thread's linear id;
one touched in a single region (or written only at block level, like the arguments) stays a
scalar that LLVM keeps in registers. Which is which is learnt by lowering twice: the first pass
records where each variable is touched, the second lowers with that layout.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.backends.cpu.wg_plan import WorkGroupPlan, barrier_statement
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.lower import FunctionLowerer
from gpunb.compiler.lower import module as lower_module
from gpunb.compiler.typed import JoinKind, TypedFunction, VarKind
from gpunb.compiler.values import is_compile_time
from gpunb.foundation import types as t

BLOCK = -1  # "region" of code that runs once per block


class WorkGroupState:
    """Shared by the kernel's lowerer and the lowerers of functions inlined into it."""

    def __init__(self, plan: WorkGroupPlan, layout: dict | None):
        self.plan = plan
        self.layout = layout  # Var or ("local", k) -> index into self.bases (pass 2)
        self.region = BLOCK
        self.n_regions = 0
        self.read: dict = {}  # Var -> regions where code reads it (pass 1)
        self.passed: dict = {}  # phi Var -> regions where a join passes it on (pass 1)
        self.written: dict = {}  # Var -> regions it is written in (pass 1)
        self.flow_edges: dict = {}  # phi Var -> the phis a join passes it on to (pass 1)
        self.def_regions: dict = {}  # Var -> regions it is written in (pass 2: from pass 1)
        self.in_join = False
        self.shadows: dict = {}  # block phi -> its shadow slot
        self.per_thread_types: dict = {}  # key -> llvm type, in first-touch order
        self.local_count = 0
        self.thread = None  # (tx, ty, tz, linear) i32 SSA values of the current thread
        self.block_values: dict = {}  # ("ntid", "x") ... and "shared", "dyn_shared", "n"
        self.bases: list = []  # per-thread array base pointers (pass 2)
        self.scratch = None
        # Var of a uniform for's counter -> (its block-level value, type), inside its body
        self.block_known: dict = {}
        # while lowering a region's fast version (wg_hoist.py): what its test proved
        self.unchecked: frozenset = frozenset()  # (Subscript node, axis): no bounds check
        self.true_tests: frozenset = frozenset()  # conditions known to be true
        # pointer -> layout index: every pointer made into a per-thread variable's array
        # (wg_alias.py gives those arrays alias scopes of their own)
        self.thread_pointers: dict = {}


class WorkGroupLowerer(FunctionLowerer):
    """FunctionLowerer whose kernel body is regions of thread loops (see the module doc)."""

    @property
    def wg(self) -> WorkGroupState:
        return self.target.wg

    # ---- variables: scalar or per-thread -------------------------------------------------------

    def _per_thread(self, key):
        layout = self.wg.layout
        return None if layout is None else layout.get(key)

    def slot(self, var, writing: bool = False):
        wg = self.wg
        vt = self.var_type(var)
        if vt is None or isinstance(vt, t.NoneType) or is_compile_time(vt):
            return None
        if wg.layout is None:
            table = wg.written if writing else (wg.passed if wg.in_join else wg.read)
            table.setdefault(var, set()).add(wg.region)
            wg.per_thread_types.setdefault(var, dm.value_type(vt))
        if writing and wg.thread is not None and var in wg.plan.block_phis:
            return self._shadow(var)
        index = self._per_thread(var)
        if index is None:
            return super().slot(var)
        if wg.thread is None:
            raise self.error(self.typed.source.tree, f"internal: per-thread variable {var} "
                             "read at block level")
        return self._thread_element(index, dm.value_type(vt), var)

    def join(self, node, kind: JoinKind) -> None:
        wg = self.wg
        if wg.layout is None:
            for phi in self.typed.joins.get((node, kind), ()):
                wg.flow_edges[phi] = self.typed.flows.get(phi, ())
        wg.in_join = True
        try:
            super().join(node, kind)
        finally:
            wg.in_join = False

    def load_var(self, var):
        if var.kind is VarKind.UNBOUND:  # no assignment reaches this read: UnboundLocalError
            return self.unbound_read(var.site, var)
        wg = self.wg
        remat = wg.plan.rematerialise.get(var)
        if remat is not None and wg.layout is not None and wg.thread is not None and \
                wg.region not in wg.def_regions.get(var, ()):
            expr, index = remat  # computed again here: cheaper than a per-thread copy
            value = self.expr(expr)
            vt = self.type_of(expr)
            if index is not None:
                value, vt = self.builder.extract_value(value, index), vt.items[index]
            return ops.cast(self.builder, value, vt, self.var_type(var))
        slot = self.slot(var)
        if slot is None:
            return None
        return self.builder.load(slot, typ=dm.value_type(self.var_type(var)))

    def condition(self, node):
        if node in self.wg.true_tests:  # proved for the whole block (wg_hoist.py)
            return ir.Constant(dm.i1, 1)
        return super().condition(node)

    def _shadow(self, var):
        """Where a region writes a block phi (copied into the phi after the region)."""
        found = self.wg.shadows.get(var)
        if found is None:
            found = self.wg.shadows[var] = self.alloca(dm.value_type(self.var_type(var)),
                                                       f"{var.name}.next")
        return found

    def _commit_block_phis(self, rid: int, before: bool) -> None:
        """Around a region that writes block phis: shadow = phi before, phi = shadow after."""
        wg, b = self.wg, self.builder
        if wg.layout is None:
            return
        for var in wg.plan.block_phis:
            if rid in wg.def_regions.get(var, ()):
                phi, shadow = super().slot(var), self._shadow(var)
                llty = dm.value_type(self.var_type(var))
                src, dst = (phi, shadow) if before else (shadow, phi)
                b.store(b.load(src, typ=llty), dst)

    def _thread_element(self, index: int, llty, key=None):
        linear = self.builder.zext(self.wg.thread[3], dm.i64)
        pointer = self.builder.gep(self.wg.bases[index], [linear], source_etype=llty)
        if key is not None and not isinstance(key, tuple):  # a variable, not a local array
            self.wg.thread_pointers[pointer] = index
        return pointer

    def _put(self, var, value) -> None:
        """Store `value` into var's slot; at block level a per-thread var gets it in every
        thread's element (the arguments flowing into phis)."""
        index = self._per_thread(var)
        if index is not None and self.wg.thread is None:
            base, b = self.wg.bases[index], self.builder

            def store(i):
                pointer = b.gep(base, [i], source_etype=value.type)
                self.wg.thread_pointers[pointer] = index
                b.store(value, pointer)

            self.loop_range(self.wg.block_values["n"], store, "wg.broadcast")
            return
        slot = self.slot(var, writing=True)
        if slot is not None:
            self.builder.store(value, slot)

    def store_var(self, var, value, value_type: t.Type) -> None:
        vt = self.var_type(var)
        if isinstance(vt, t.NoneType):
            self.flow(var, None, vt)  # a None reaching an Optional: its "is None" flag
            return
        if value is None or self.slot_type(var) is None:
            return
        value = ops.cast(self.builder, value, value_type, vt)
        self._put(var, value)
        self.flow(var, value, vt)

    def flow(self, var, value, vt: t.Type) -> None:
        b = self.builder
        for phi in self.typed.flows.get(var, ()):
            if self.slot_type(phi) is not None:
                self._put(phi, ops.cast(b, value, vt, self.var_type(phi)))

    def slot_type(self, var):
        vt = self.var_type(var)
        if vt is None or isinstance(vt, t.NoneType) or is_compile_time(vt):
            return None
        return vt

    def alloca(self, llty: ir.Type, name: str = ""):
        """cuda.local.array storage is per thread: the same array may be used across regions."""
        if name != "local.array":
            return super().alloca(llty, name)
        wg = self.wg
        key = ("local", wg.local_count)
        wg.local_count += 1
        if wg.layout is None:
            wg.per_thread_types[key] = llty
        if wg.layout is None or key not in wg.layout:
            return super().alloca(llty, name)
        return self._thread_element(wg.layout[key], llty)

    # ---- the kernel body: regions at block level -----------------------------------------------

    def lower_body(self) -> None:
        pending = self.block_sequence(self.typed.source.tree.body, [])
        self.region(pending, final=True)
        if not self.builder.block.is_terminated:
            self.builder.branch(self.exit_block)

    def block_sequence(self, stmts: list, pending: list) -> list:
        """Lower statements that run at block level; returns the region still open."""
        plan = self.wg.plan
        for stmt in stmts:
            if not plan.has_barrier(stmt):
                pending.append(stmt)
                continue
            found = barrier_statement(self.typed, stmt)
            if found is not None:
                pending = self.barrier(found[0], found[1], pending)
            elif isinstance(stmt, ast.If):
                pending = self.uniform_if(stmt, pending)
            elif isinstance(stmt, ast.While):
                pending = self.uniform_while(stmt, pending)
            else:
                pending = self.uniform_for(stmt, pending)
        return pending

    def barrier(self, call: ast.Call, target, pending: list) -> list:
        kind = self.typed.calls[call].builtin
        kind = getattr(kind, "kind", "sync")
        if kind in ("sync", "block"):
            self.region(pending)
            return []
        count = self.alloca(dm.i32, "wg.count")
        self.builder.store(ir.Constant(dm.i32, 0), count)
        pred_node = call.args[0]

        def add_pred():
            b = self.builder
            truth = ops.truth(b, self.expr(pred_node), self.type_of(pred_node))
            b.store(b.add(b.load(count), b.zext(truth, dm.i32)), count)

        self.region(pending + [add_pred])
        b = self.builder
        total = b.load(count)
        if kind == "count":
            result = total
        elif kind == "or":
            result = b.zext(b.icmp_signed("!=", total, ir.Constant(dm.i32, 0)), dm.i32)
        else:
            n = b.trunc(self.wg.block_values["n"], dm.i32)
            result = b.zext(b.icmp_signed("==", total, n), dm.i32)
        if target is None:
            return []
        return [lambda: self.store_target(target, result, t.int32)]

    def _uniform_value(self, pending: list, compute, llty, name: str):
        """Run `pending` and `compute()` (per thread) as one region; the value, at block level."""
        slot = self.alloca(llty, name)

        def store():
            self.builder.store(compute(), slot)

        self.region(pending + [store])
        return self.builder.load(slot)

    def _join_item(self, node, kind: JoinKind) -> list:
        phis = self.typed.joins.get((node, kind), ())
        if any(self.typed.flows.get(phi) for phi in phis):
            return [lambda: self.join(node, kind)]
        return []

    def uniform_if(self, node: ast.If, pending: list) -> list:
        known = self.typed.branches.get(node)
        if known is not None:
            return self.block_sequence(node.body if known else node.orelse, pending)
        cond = self._uniform_value(pending, lambda: self.condition(node.test), dm.i1, "wg.if")
        then_bb, else_bb, end_bb = (self.new_block(f"wg.if.{n}") for n in ("then", "else",
                                                                            "end"))
        self.builder.cbranch(cond, then_bb, else_bb)
        for bb, body in ((then_bb, node.body), (else_bb, node.orelse)):
            self.builder.position_at_end(bb)
            self.region(self.block_sequence(body, []))
            self.builder.branch(end_bb)
        self.builder.position_at_end(end_bb)
        return self._join_item(node, JoinKind.IF)

    def uniform_while(self, node: ast.While, pending: list) -> list:
        b = self.builder
        self.region(pending)
        cond_bb, body_bb, end_bb = (self.new_block(f"wg.while.{n}") for n in ("cond", "body",
                                                                              "end"))
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        self.target.poll(self)  # a stopping point per iteration of the block's loop
        cond = self._uniform_value(self._join_item(node, JoinKind.HEADER),
                                   lambda: self.condition(node.test), dm.i1, "wg.while")
        b.cbranch(cond, body_bb, end_bb)
        b.position_at_end(body_bb)
        self.region(self.block_sequence(node.body, []))
        b.branch(cond_bb)
        b.position_at_end(end_bb)
        return self._join_item(node, JoinKind.EXIT)

    def uniform_for(self, node: ast.For, pending: list) -> list:
        """for i in range(uniform...): the counter at block level, the body as regions."""
        b = self.builder
        source = self.typed.loops[node].sources[0]
        item = dm.value_type(source.item)
        slots = [self.alloca(item, f"wg.range.{n}") for n in ("start", "stop", "step")]

        def operands():
            for value, slot in zip(self.range_operands(source), slots, strict=True):
                self.builder.store(value, slot)

        self.region(pending + [operands])
        start, stop, step = (b.load(s) for s in slots)
        index = self.alloca(item, "wg.range.index")
        b.store(start, index)
        cond_bb, body_bb, end_bb = (self.new_block(f"wg.for.{n}") for n in ("cond", "body",
                                                                            "end"))
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        self.target.poll(self)
        self.region(self._join_item(node, JoinKind.HEADER))
        current = b.load(index)
        cmp = b.icmp_signed if source.item.signed else b.icmp_unsigned
        zero = ir.Constant(item, 0)
        if source.step_value is not None:
            cond = cmp("<" if source.step_value > 0 else ">", current, stop)
        else:
            cond = b.or_(b.and_(b.icmp_signed(">", step, zero), cmp("<", current, stop)),
                         b.and_(b.icmp_signed("<", step, zero), cmp(">", current, stop)))
        b.cbranch(cond, body_bb, end_bb)
        b.position_at_end(body_bb)
        bind = [lambda: self.store_target(node.target, current, source.item)]
        target = self.typed.defs.get(node.target) if isinstance(node.target, ast.Name) else None
        if target is not None:  # in the body's regions the counter is `current`
            self.wg.block_known[target] = (current, source.item)
        self.region(self.block_sequence(node.body, bind))
        self.wg.block_known.pop(target, None)
        b.store(b.add(b.load(index), step), index)
        b.branch(cond_bb)
        b.position_at_end(end_bb)
        return self._join_item(node, JoinKind.EXIT)

    # ---- one region: for z, y, x over the block ------------------------------------------------

    def _counted(self, n, name: str, start=None, vectorize: bool = True, cold: bool = False):
        """A counted loop skeleton (n's type): returns (counter, next block, done block)."""
        b = self.builder
        pre = b.block
        head, body, nxt, done = (self.new_block(f"{name}.{s}") for s in ("head", "body", "next",
                                                                        "done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(n.type, name=name)
        i.add_incoming(start if start is not None else ir.Constant(n.type, 0), pre)
        b.cbranch(b.icmp_unsigned("<", i, n), body, done)
        latch = ir.IRBuilder(nxt)
        i.add_incoming(latch.add(i, ir.Constant(n.type, 1), flags=["nuw", "nsw"]), nxt)
        back = latch.branch(head)
        if cold or not vectorize:
            from gpunb.backends.cpu.objects import COLD_LOOP, NO_VECTORIZE

            back.set_metadata("llvm.loop", self.mb.module.add_metadata(
                [ir.MetaDataString(self.mb.module, COLD_LOOP if cold else NO_VECTORIZE)]))
        b.position_at_end(body)
        return i, nxt, done

    def _x_range(self, items: list, nx, rid: int):
        """(first x, stop x, items): a region that is only `if threadIdx.x < u:` (or `== u`)
        loops over those threads and drops the test (a tree reduction's halving steps)."""
        wg, b = self.wg, self.builder
        bound = None
        if len(items) == 1 and isinstance(items[0], ast.If) and \
                not self.typed.joins.get((items[0], JoinKind.IF)):
            bound = wg.plan.uniformity.x_bound(items[0], wg.plan.rematerialise)
        if bound is None:
            return ir.Constant(dm.i32, 0), nx, items
        op, node = bound
        zero = ir.Constant(dm.i32, 0)
        wg.thread, wg.region = (zero, zero, zero, zero), rid  # u is uniform: thread 0 says it
        value = ops.cast(b, self.expr(node), self.type_of(node), t.int64)
        wg.thread, wg.region = None, BLOCK
        wide_nx = b.zext(nx, dm.i64)
        lo = ir.Constant(dm.i64, 0)
        first = b.select(b.icmp_signed("<", value, lo), lo, value) if op == "==" else lo
        stop = b.add(value, ir.Constant(dm.i64, 1)) if op == "==" else value
        stop = b.select(b.icmp_signed("<", stop, lo), lo, stop)
        stop = b.select(b.icmp_signed(">", stop, wide_nx), wide_nx, stop)
        first = b.select(b.icmp_signed(">", first, stop), stop, first)
        return b.trunc(first, dm.i32), b.trunc(stop, dm.i32), list(items[0].body)

    def region(self, items: list, final: bool = False) -> None:
        """Emit `items` (statements, or callables that emit per-thread code) as a thread loop;
        where one test per block proves the region's index checks and guards (wg_hoist.py), as
        two: the loop without them when the test holds, the exact one when it does not."""
        if not items:
            return
        wg, b = self.wg, self.builder
        rid = wg.n_regions
        wg.n_regions += 1
        self._commit_block_phis(rid, before=True)
        nx = wg.block_values[("ntid", "x")]
        x_start, x_stop, items = self._x_range(items, nx, rid)
        hoist = None
        if wg.layout is not None:  # pass 2 (pass 1 only learns where variables are touched)
            from gpunb.backends.cpu import wg_hoist

            hoist = wg_hoist.plan_region(self, items, rid)
        if hoist is None:
            self._thread_loops(items, x_start, x_stop, rid, final)
        else:
            ok = self._precheck(hoist, x_start, x_stop, rid)
            fast_bb, slow_bb, done_bb = (self.new_block(f"wg{rid}.{n}") for n in
                                         ("fast", "exact", "joined"))
            b.cbranch(ok, fast_bb, slow_bb)
            b.position_at_end(fast_bb)
            replay = self._lowering_state()
            wg.unchecked, wg.true_tests = frozenset(hoist.unchecked), frozenset(hoist.true_tests)
            try:
                self._thread_loops(items, x_start, x_stop, rid, final)
            finally:
                wg.unchecked, wg.true_tests = frozenset(), frozenset()
            b.branch(done_bb)
            b.position_at_end(slow_bb)
            self._restore_lowering_state(replay)
            self._thread_loops(items, x_start, x_stop, rid, final, cold=True)
            b.branch(done_bb)
            b.position_at_end(done_bb)
        self._commit_block_phis(rid, before=False)

    def _precheck(self, hoist, x_start, x_stop, rid: int):
        """The block-level test of wg_hoist: the thread ids' box is [x_start, x_stop) x
        [0, ntid.y) x [0, ntid.z)."""
        from gpunb.backends.cpu.wg_hoist import Precheck

        wg, b = self.wg, self.builder
        one = ir.Constant(dm.i64, 1)
        box = {("tid", "x"): (b.zext(x_start, dm.i64), b.sub(b.zext(x_stop, dm.i64), one))}
        for axis in "yz":
            box[("tid", axis)] = (ir.Constant(dm.i64, 0),
                                  b.sub(b.zext(wg.block_values[("ntid", axis)], dm.i64), one))
        zero = ir.Constant(dm.i32, 0)
        wg.thread, wg.region = (zero, zero, zero, zero), rid  # leaves are uniform
        try:
            return Precheck(self, hoist, box).emit()
        finally:
            wg.thread, wg.region = None, BLOCK

    def _lowering_state(self) -> tuple:
        """What lowering a region allocates (local arrays' per-thread slots, static shared
        memory): the exact version allocates the same as the fast one, not more."""
        target = self.target
        return (self.wg.local_count, target.static_shared, len(target.shared_layout),
                self.mb.shared_static_bytes)

    def _restore_lowering_state(self, state: tuple) -> None:
        target = self.target
        self.wg.local_count, target.static_shared, n_layout, self.mb.shared_static_bytes = state
        del target.shared_layout[n_layout:]

    def _thread_loops(self, items: list, x_start, x_stop, rid: int, final: bool,
                      cold: bool = False) -> None:
        """for z, y, x over the block (x in [x_start, x_stop)): the region's statements (`cold`:
        the exact loop beside a fast one, kept scalar and rolled)."""
        wg, b = self.wg, self.builder
        nx, ny, nz = (wg.block_values[("ntid", a)] for a in "xyz")
        z, z_next, z_done = self._counted(nz, f"wg{rid}.z")
        y, y_next, y_done = self._counted(ny, f"wg{rid}.y")
        row = b.mul(b.add(b.mul(z, ny), y), nx)
        # a 64-bit counter: cuda.grid()'s 64-bit index then is an induction variable LLVM
        # vectorises directly (threadIdx.x is its truncation)
        x64, x_next, x_done = self._counted(b.zext(x_stop, dm.i64), f"wg{rid}.x",
                                            b.zext(x_start, dm.i64),
                                            vectorize=not _guarded_memory(items, wg.true_tests),
                                            cold=cold)
        x = b.trunc(x64, dm.i32)
        wg.thread = (x, y, z, b.add(row, x))
        wg.region = rid
        saved = self.exit_block, self.mb.kernel_exit
        if final:  # return, or a raise without debug, ends this thread only
            self.exit_block = self.mb.kernel_exit = x_next
        for item in items:
            if b.block.is_terminated:
                break
            if isinstance(item, ast.AST):
                self.statements([item])
            else:
                item()
        if not b.block.is_terminated:
            b.branch(x_next)
        self.exit_block, self.mb.kernel_exit = saved
        wg.thread, wg.region = None, BLOCK
        b.position_at_end(x_done)
        b.branch(y_next)
        b.position_at_end(y_done)
        b.branch(z_next)
        b.position_at_end(z_done)


def _guarded_memory(items: list, proved: frozenset = frozenset()) -> bool:
    """Whether a region reads or writes memory under a condition (`if`, `a if c else b`, `and`)
    outside inner loops: LLVM would vectorise its thread loop with masked memory operations.
    Conditions in `proved` (known true for the block) guard nothing."""
    todo = [n for n in items if isinstance(n, ast.AST)]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.If, ast.IfExp)) and node.test in proved:
            todo.extend(n for n in ast.iter_child_nodes(node) if n is not node.test)
        elif node in proved:
            continue
        elif isinstance(node, (ast.If, ast.IfExp, ast.BoolOp)):
            if any(isinstance(n, ast.Subscript) for n in ast.walk(node)):
                return True
        elif not isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


class WorkGroupModuleBuilder(lower_module.ModuleBuilder):
    def __init__(self, target, options: dict, name: str):
        super().__init__(target, options, name, WorkGroupLowerer)


def lower_workgroup(typed: TypedFunction, make_target, plan: WorkGroupPlan, options: dict,
                    symbol: str):
    """Lower twice: once to learn where variables are touched, once with their layout."""
    first = make_target()
    first.wg = WorkGroupState(plan, None)
    WorkGroupModuleBuilder(first, options, typed.name).lower_kernel(typed, symbol)
    state = first.wg
    live = _live(state)
    layout, types = {}, []
    for key, llty in state.per_thread_types.items():
        # a local array needs a copy per thread only when a barrier splits the kernel
        local = isinstance(key, tuple) and state.n_regions > 1
        if local or (not isinstance(key, tuple) and key in live and
                     _crosses_regions(state, key)):
            layout[key] = len(types)
            types.append(llty)
    target = make_target()
    target.wg = WorkGroupState(plan, layout)
    target.wg.def_regions = state.written
    target.wg_types = types
    mb = WorkGroupModuleBuilder(target, options, typed.name)
    mb.lower_kernel(typed, symbol)
    from gpunb.backends.cpu.wg_alias import tag_per_thread_scopes

    tag_per_thread_scopes(mb.module, target.body, target.wg.thread_pointers, symbol)
    return mb


def _live(state: WorkGroupState) -> set:
    """Vars whose value someone reads: read by code, or passed on by a join to a live phi."""
    live = set(state.read)
    changed = True
    while changed:
        changed = False
        for phi, targets in state.flow_edges.items():
            if phi not in live and phi in state.passed and any(x in live for x in targets):
                live.add(phi)
                changed = True
    return live


def _crosses_regions(state: WorkGroupState, var) -> bool:
    """Whether `var` needs a copy per thread: touched in more than one region, unless it is
    written only at block level (an argument) or holds a block-uniform value."""
    plan = state.plan
    if var in plan.uniform_vars or var in plan.rematerialise or var in plan.block_phis:
        return False
    written = state.written.get(var, set())
    if not written - {BLOCK}:
        return False
    touched = written | state.read.get(var, set()) | state.passed.get(var, set())
    return len(touched) > 1
