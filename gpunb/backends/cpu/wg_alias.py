"""Alias scopes for a work-group kernel's per-thread variables: their scratch arrays touch nothing
else, and LLVM is told so.

A variable that lives across barriers sits in a per-thread array of the block's scratch buffer
(wg_lower.py), loaded and stored at every use. The scratch is malloc'd by the kernel itself and
its addresses never leave the slots, but LLVM cannot see that: in a loop such as a tiled
matmul's `for j in range(TPB): tmp += sA[ty, j] * sB[j, tx]`, each store to `tmp` might change
the next load of `sA` or `sB`, so it keeps every store (two per step: the value and the loop's
phi) and cannot keep `tmp` in a register. Scoped alias metadata (LLVM's `!alias.scope` and
`!noalias`) says it: each per-thread array is a scope of its own, and every other load and store
of the kernel is marked not to alias any of them.

The tagging is checked, not assumed: the pointers into each array are followed through the
kernel's GEPs and bitcasts, and if any of them is used other than as the address of a load or
store (stored as a value, passed to a call, selected, ...), nothing is tagged.
"""

from __future__ import annotations

from llvmlite import ir

_ACCESS = (ir.LoadInstr, ir.StoreInstr)


def _address(instr):
    """The pointer a load or store accesses."""
    return instr.operands[0] if isinstance(instr, ir.LoadInstr) else instr.operands[1]


def _derived(fn: ir.Function, roots: dict) -> dict | None:
    """Every value of `fn` computed from a per-thread array pointer in `roots` (value -> array
    index) by GEPs and bitcasts, or None when such a pointer escapes (is used other than as a
    load's or store's address)."""
    found = dict(roots)
    for block in fn.blocks:
        for instr in block.instructions:
            operands = list(getattr(instr, "operands", ()))
            touched = [found[op] for op in operands if op in found]
            if not touched:
                continue
            if isinstance(instr, ir.GEPInstr) and operands[0] in found and len(touched) == 1:
                found[instr] = touched[0]
            elif isinstance(instr, ir.CastInstr) and instr.opname == "bitcast":
                found[instr] = touched[0]
            elif isinstance(instr, ir.LoadInstr):
                continue
            elif isinstance(instr, ir.StoreInstr) and operands[0] not in found:
                continue
            else:
                return None
    return found


def tag_per_thread_scopes(module: ir.Module, fn: ir.Function, roots: dict, name: str) -> bool:
    """Give each per-thread array's loads and stores its own alias scope and every other load
    and store of `fn` `!noalias` over all of them. `roots`: pointer value -> array index, for
    every pointer the lowering made into a per-thread array. Returns whether it tagged."""
    if not roots:
        return False
    found = _derived(fn, roots)
    if found is None:
        return False
    domain = module.add_metadata([ir.MetaDataString(module, f"gpunb.wg.{name}")])
    indices = sorted(set(roots.values()))
    scopes = {k: module.add_metadata([ir.MetaDataString(module, f"gpunb.wg.{name}.var{k}"),
                                      domain]) for k in indices}
    own = {k: module.add_metadata([scopes[k]]) for k in indices}
    others = {k: module.add_metadata([scopes[j] for j in indices if j != k]) for k in indices
              if len(indices) > 1}
    everything = module.add_metadata([scopes[k] for k in indices])
    for block in fn.blocks:
        for instr in block.instructions:
            if not isinstance(instr, _ACCESS):
                continue
            k = found.get(_address(instr))
            if k is None:
                instr.set_metadata("noalias", everything)
            else:
                instr.set_metadata("alias.scope", own[k])
                if k in others:
                    instr.set_metadata("noalias", others[k])
    return True
