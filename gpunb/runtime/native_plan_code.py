"""The machine code behind every native launcher: one function, compiled once per process, that
follows a launch *plan* (plain memory written by runtime/native_pack.py).

One fixed function rather than code per kernel because an MCJIT compile costs ~10 ms: a plan is
filled in microseconds. The function is a METH_O builtin `f(args)` whose `self` is a bytes object
(the bound configuration, DIMS below) naming its plan. Plan layout, 64-bit words:

    0 owner thread id      1 gate value seen      2 watch block address (0: decline)
    3 argument count       4 parameter array      5 launch function (0: pack only)
    6 CUfunction           7 list for the last launched name (0: none)   8 that name
    9.. one ARG_WORDS record per argument: op, exact class, key/dtype, count, flags, destination

A watch block is [n, (dict, name, object or 0) * n]. Ops: RAW copies `count` bytes of the object
after its header; INT64 is PyLong_AsLongLong; BOOL compares with True; SLOTS checks a gpunb array's
interned `_key` and copies its `_slots` tuple (count items); NDARRAY checks a numpy header's dtype
object, ndim and flags and copies data pointer, shape and strides. Anything unexpected: -1
(declined), with no Python exception left set. Packed: -2. Launched: the CUresult.
"""

from __future__ import annotations

import ctypes
import struct
import threading

METH_O = 0x0008
DECLINED = -1
PACKED = -2
PLAN_HEADER = 9
ARG_WORDS = 6
OP_RAW, OP_INT64, OP_BOOL, OP_SLOTS, OP_NDARRAY = 1, 2, 3, 4, 5
# `self` of a bound launcher: plan address, grid xyz, block xyz, dynamic shared bytes (u32),
# padding, stream handle
DIMS = struct.Struct("<Q7IIQ")
NPY_FLAGS = 0x1 | 0x2 | 0x100 | 0x400  # C_CONTIGUOUS | F_CONTIGUOUS | ALIGNED | WRITEABLE
_KEY_NAME = "_key"
_SLOTS_NAME = "_slots"

_C_API = ("PyThread_get_thread_ident", "PyDict_GetItem", "PyObject_GetAttr", "Py_DecRef",
          "Py_IncRef", "PyLong_AsLongLong", "PyLong_AsUnsignedLongLong", "PyErr_Occurred",
          "PyErr_Clear", "PyLong_FromLong", "PyEval_SaveThread", "PyEval_RestoreThread",
          "PyList_SetItem")

_IR = """
define ptr @gpunb_plan_launch(ptr %self, ptr %args) {
entry:
  %plan_word = getelementptr i8, ptr %self, i64 32
  %plan_int = load i64, ptr %plan_word, align 1
  %plan = inttoptr i64 %plan_int to ptr
  %owner = load i64, ptr %plan
  %tid = call i64 @tid()
  %mine = icmp eq i64 %tid, %owner
  br i1 %mine, label %gate, label %decline
gate:
  %gate_now = load i64, ptr @GATE
  %seen_p = getelementptr i64, ptr %plan, i64 1
  %seen = load i64, ptr %seen_p
  %gate_ok = icmp eq i64 %gate_now, %seen
  br i1 %gate_ok, label %has_watch, label %decline
has_watch:
  %block_p = getelementptr i64, ptr %plan, i64 2
  %block = load ptr, ptr %block_p
  %block_ok = icmp ne ptr %block, null
  br i1 %block_ok, label %count, label %decline
count:
  %nwatch = load i64, ptr %block
  %nargs_p = getelementptr i64, ptr %plan, i64 3
  %nargs = load i64, ptr %nargs_p
  %given_p = getelementptr i8, ptr %args, i64 16
  %given = load i64, ptr %given_p
  %count_ok = icmp eq i64 %given, %nargs
  br i1 %count_ok, label %watch, label %decline
watch:
  %wi = phi i64 [0, %count], [%wnext, %wbody]
  %wdone = icmp eq i64 %wi, %nwatch
  br i1 %wdone, label %argloop, label %wbody
wbody:
  %wk = mul i64 %wi, 3
  %wd_i = add i64 %wk, 1
  %wn_i = add i64 %wk, 2
  %wo_i = add i64 %wk, 3
  %wd_p = getelementptr i64, ptr %block, i64 %wd_i
  %wn_p = getelementptr i64, ptr %block, i64 %wn_i
  %wo_p = getelementptr i64, ptr %block, i64 %wo_i
  %wd = load ptr, ptr %wd_p
  %wn = load ptr, ptr %wn_p
  %wo = load ptr, ptr %wo_p
  %got = call ptr @dict_get(ptr %wd, ptr %wn)
  %wsame = icmp eq ptr %got, %wo
  %wnext = add i64 %wi, 1
  br i1 %wsame, label %watch, label %decline
argloop:
  %ai = phi i64 [0, %watch], [%anext, %argnext]
  %adone = icmp eq i64 %ai, %nargs
  br i1 %adone, label %done, label %argbody
argbody:
  %rec_i = mul i64 %ai, ARG_WORDS
  %rec_j = add i64 %rec_i, PLAN_HEADER
  %rec = getelementptr i64, ptr %plan, i64 %rec_j
  %item_i = add i64 %ai, 3
  %item_p = getelementptr i64, ptr %args, i64 %item_i
  %arg = load ptr, ptr %item_p
  %acls_p = getelementptr i8, ptr %arg, i64 8
  %acls = load ptr, ptr %acls_p
  %cls_p = getelementptr i64, ptr %rec, i64 1
  %cls = load ptr, ptr %cls_p
  %cls_ok = icmp eq ptr %acls, %cls
  br i1 %cls_ok, label %dispatch, label %decline
dispatch:
  %op = load i64, ptr %rec
  %extra_p = getelementptr i64, ptr %rec, i64 2
  %extra = load ptr, ptr %extra_p
  %n_p = getelementptr i64, ptr %rec, i64 3
  %n = load i64, ptr %n_p
  %dest_p = getelementptr i64, ptr %rec, i64 5
  %dest = load ptr, ptr %dest_p
  switch i64 %op, label %decline [i64 1, label %raw
                                  i64 2, label %int64
                                  i64 3, label %bool
                                  i64 4, label %slots
                                  i64 5, label %ndarray]
raw:
  br label %rawloop
rawloop:
  %rb = phi i64 [0, %raw], [%rbnext, %rawbody]
  %rbdone = icmp eq i64 %rb, %n
  br i1 %rbdone, label %argnext, label %rawbody
rawbody:
  %rsrc_i = add i64 %rb, 16
  %rsrc = getelementptr i8, ptr %arg, i64 %rsrc_i
  %rbyte = load i8, ptr %rsrc
  %rdst = getelementptr i8, ptr %dest, i64 %rb
  store i8 %rbyte, ptr %rdst
  %rbnext = add i64 %rb, 1
  br label %rawloop
int64:
  %iv = call i64 @as_i64(ptr %arg)
  %iminus = icmp eq i64 %iv, -1
  br i1 %iminus, label %int64_check, label %int64_store
int64_check:
  %ierr = call ptr @err_occurred()
  %inone = icmp eq ptr %ierr, null
  br i1 %inone, label %int64_store, label %fail
int64_store:
  store i64 %iv, ptr %dest, align 1
  br label %argnext
bool:
  %is_true = icmp eq ptr %arg, @TRUE
  %byte = zext i1 %is_true to i8
  store i8 %byte, ptr %dest
  br label %argnext
slots:
  %key = call ptr @getattr(ptr %arg, ptr @KEY_NAME)
  %key_null = icmp eq ptr %key, null
  br i1 %key_null, label %fail, label %slots_key
slots_key:
  call void @decref(ptr %key)
  %key_ok = icmp eq ptr %key, %extra
  br i1 %key_ok, label %slots_get, label %decline
slots_get:
  %tup = call ptr @getattr(ptr %arg, ptr @SLOTS_NAME)
  %tup_null = icmp eq ptr %tup, null
  br i1 %tup_null, label %fail, label %slots_tuple
slots_tuple:
  call void @decref(ptr %tup)
  %tcls_p = getelementptr i8, ptr %tup, i64 8
  %tcls = load ptr, ptr %tcls_p
  %tcls_ok = icmp eq ptr %tcls, @TUPLE
  br i1 %tcls_ok, label %slots_size, label %decline
slots_size:
  %tsize_p = getelementptr i8, ptr %tup, i64 16
  %tsize = load i64, ptr %tsize_p
  %tsize_ok = icmp eq i64 %tsize, %n
  br i1 %tsize_ok, label %sloop, label %decline
sloop:
  %sk = phi i64 [0, %slots_size], [%sknext, %sstore]
  %sdone = icmp eq i64 %sk, %n
  br i1 %sdone, label %argnext, label %sbody
sbody:
  %sitem_i = add i64 %sk, 3
  %sitem_p = getelementptr i64, ptr %tup, i64 %sitem_i
  %sitem = load ptr, ptr %sitem_p
  %sfirst = icmp eq i64 %sk, 0
  br i1 %sfirst, label %s_unsigned, label %s_signed
s_unsigned:
  %su = call i64 @as_u64(ptr %sitem)
  br label %s_got
s_signed:
  %ss = call i64 @as_i64(ptr %sitem)
  br label %s_got
s_got:
  %sv = phi i64 [%su, %s_unsigned], [%ss, %s_signed]
  %sminus = icmp eq i64 %sv, -1
  br i1 %sminus, label %s_check, label %sstore
s_check:
  %serr = call ptr @err_occurred()
  %snone = icmp eq ptr %serr, null
  br i1 %snone, label %sstore, label %fail
sstore:
  %sdst = getelementptr i64, ptr %dest, i64 %sk
  store i64 %sv, ptr %sdst, align 1
  %sknext = add i64 %sk, 1
  br label %sloop
ndarray:
  %descr_p = getelementptr i8, ptr %arg, i64 56
  %descr = load ptr, ptr %descr_p
  %descr_ok = icmp eq ptr %descr, %extra
  %nd_p = getelementptr i8, ptr %arg, i64 24
  %nd32 = load i32, ptr %nd_p
  %nd = sext i32 %nd32 to i64
  %nd_ok = icmp eq i64 %nd, %n
  %flags_p = getelementptr i8, ptr %arg, i64 64
  %flags32 = load i32, ptr %flags_p
  %flags_m = and i32 %flags32, NPY_FLAGS
  %flags = zext i32 %flags_m to i64
  %want_p = getelementptr i64, ptr %rec, i64 4
  %want = load i64, ptr %want_p
  %flags_ok = icmp eq i64 %flags, %want
  %nd_both = and i1 %descr_ok, %nd_ok
  %nd_all = and i1 %nd_both, %flags_ok
  br i1 %nd_all, label %nd_copy, label %decline
nd_copy:
  %data_p = getelementptr i8, ptr %arg, i64 16
  %data = load i64, ptr %data_p
  store i64 %data, ptr %dest, align 1
  %dims_p = getelementptr i8, ptr %arg, i64 32
  %dims = load ptr, ptr %dims_p
  %strides_p = getelementptr i8, ptr %arg, i64 40
  %strides = load ptr, ptr %strides_p
  br label %ndloop
ndloop:
  %ax = phi i64 [0, %nd_copy], [%axnext, %ndbody]
  %axdone = icmp eq i64 %ax, %n
  br i1 %axdone, label %argnext, label %ndbody
ndbody:
  %ext_p = getelementptr i64, ptr %dims, i64 %ax
  %ext = load i64, ptr %ext_p
  %ext_i = add i64 %ax, 1
  %ext_d = getelementptr i64, ptr %dest, i64 %ext_i
  store i64 %ext, ptr %ext_d, align 1
  %step_p = getelementptr i64, ptr %strides, i64 %ax
  %step = load i64, ptr %step_p
  %step_j = add i64 %ext_i, %n
  %step_d = getelementptr i64, ptr %dest, i64 %step_j
  store i64 %step, ptr %step_d, align 1
  %axnext = add i64 %ax, 1
  br label %ndloop
argnext:
  %anext = add i64 %ai, 1
  br label %argloop
done:
  %launch_p = getelementptr i64, ptr %plan, i64 5
  %launch = load ptr, ptr %launch_p
  %pack_only = icmp eq ptr %launch, null
  br i1 %pack_only, label %packed, label %name
packed:
  %packed_r = call ptr @from_long(i64 PACKED)
  ret ptr %packed_r
name:
  %last_p = getelementptr i64, ptr %plan, i64 7
  %last = load ptr, ptr %last_p
  %no_last = icmp eq ptr %last, null
  br i1 %no_last, label %go, label %set_last
set_last:
  %name_p = getelementptr i64, ptr %plan, i64 8
  %name_o = load ptr, ptr %name_p
  call void @incref(ptr %name_o)
  %set = call i32 @list_set(ptr %last, i64 0, ptr %name_o)
  br label %go
go:
  %fn_p = getelementptr i64, ptr %plan, i64 6
  %fn = load i64, ptr %fn_p
  %params_p = getelementptr i64, ptr %plan, i64 4
  %params = load i64, ptr %params_p
  %d = getelementptr i8, ptr %self, i64 40
  %gx = load i32, ptr %d, align 1
  %gy_p = getelementptr i8, ptr %d, i64 4
  %gy = load i32, ptr %gy_p, align 1
  %gz_p = getelementptr i8, ptr %d, i64 8
  %gz = load i32, ptr %gz_p, align 1
  %bx_p = getelementptr i8, ptr %d, i64 12
  %bx = load i32, ptr %bx_p, align 1
  %by_p = getelementptr i8, ptr %d, i64 16
  %by = load i32, ptr %by_p, align 1
  %bz_p = getelementptr i8, ptr %d, i64 20
  %bz = load i32, ptr %bz_p, align 1
  %sh_p = getelementptr i8, ptr %d, i64 24
  %sh = load i32, ptr %sh_p, align 1
  %st_p = getelementptr i8, ptr %d, i64 32
  %st = load i64, ptr %st_p, align 1
  %state = call ptr @save_thread()
  %err = call i32 %launch(i64 %fn, i32 %gx, i32 %gy, i32 %gz, i32 %bx, i32 %by, i32 %bz,
                          i32 %sh, i64 %st, i64 %params, i64 0)
  call void @restore_thread(ptr %state)
  %err64 = sext i32 %err to i64
  %result = call ptr @from_long(i64 %err64)
  ret ptr %result
fail:
  call void @err_clear()
  br label %decline
decline:
  %no = call ptr @from_long(i64 DECLINED)
  ret ptr %no
}
"""

# C-API functions by address (no symbol resolution in the JIT), and process constants
_FUNCTIONS = {"tid": ("i64", "", "PyThread_get_thread_ident"),
              "dict_get": ("ptr", "ptr, ptr", "PyDict_GetItem"),
              "getattr": ("ptr", "ptr, ptr", "PyObject_GetAttr"),
              "decref": ("void", "ptr", "Py_DecRef"),
              "incref": ("void", "ptr", "Py_IncRef"),
              "as_i64": ("i64", "ptr", "PyLong_AsLongLong"),
              "as_u64": ("i64", "ptr", "PyLong_AsUnsignedLongLong"),
              "err_occurred": ("ptr", "", "PyErr_Occurred"),
              "err_clear": ("void", "", "PyErr_Clear"),
              "from_long": ("ptr", "i64", "PyLong_FromLong"),
              "save_thread": ("ptr", "", "PyEval_SaveThread"),
              "restore_thread": ("void", "ptr", "PyEval_RestoreThread"),
              "list_set": ("i32", "ptr, i64, ptr", "PyList_SetItem")}


def _source(gate_address: int) -> str:
    """The module text with every address filled in."""
    text = _IR
    for name, (ret, params, symbol) in _FUNCTIONS.items():
        address = ctypes.cast(getattr(ctypes.pythonapi, symbol), ctypes.c_void_p).value
        # each helper is a tiny function calling the C-API by address, inlined at -O0 or not:
        # a direct call through a constant pointer either way
        args = [f"{ty} %a{k}" for k, ty in enumerate(filter(None, params.split(", ")))]
        passed = ", ".join(args)
        call = f"call {ret} %f({passed})"
        ending = f"  {call}\n  ret void\n" if ret == "void" else \
            f"  %r = {call}\n  ret {ret} %r\n"
        body = f"  %f = inttoptr i64 {address} to ptr\n" + ending
        text += f"define internal {ret} @{name}({passed}) {{\n{body}}}\n"
    constants = {"GATE": gate_address, "TRUE": id(True), "TUPLE": id(tuple),
                 "KEY_NAME": id(_KEY_NAME), "SLOTS_NAME": id(_SLOTS_NAME)}
    for name, address in constants.items():
        text = text.replace(f"@{name}", f"inttoptr (i64 {address} to ptr)")
    for name, value in {"ARG_WORDS": ARG_WORDS, "PLAN_HEADER": PLAN_HEADER,
                        "NPY_FLAGS": NPY_FLAGS, "PACKED": PACKED, "DECLINED": DECLINED}.items():
        text = text.replace(name, str(value))
    return text


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


class PlanCode:
    """The compiled function and its method table; `bind(dims, keep)` makes a builtin."""

    def __init__(self, gate_address: int):
        import llvmlite.binding as llvm

        from gpunb.backends.llvm_lock import LLVM_LOCK

        with LLVM_LOCK:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            module = llvm.parse_assembly(_source(gate_address))
            module.verify()
            # a generic machine at -O0, as the launch trampolines (no host-feature probing)
            machine = llvm.Target.from_default_triple().create_target_machine(opt=0)
            self._engine = llvm.create_mcjit_compiler(module, machine)
            self._engine.finalize_object()
            address = self._engine.get_function_address("gpunb_plan_launch")
        self._def = _MethodDef(b"gpunb_native_launch", address, METH_O, None)
        self._def_address = ctypes.addressof(self._def)
        new = ctypes.pythonapi.PyCFunction_NewEx
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
        self._new = new

    def bind(self, dims: bytes, keep):
        """A builtin `f(args) -> int` reading `dims` (DIMS-packed) as its `self`; `keep` (which
        must keep the plan alive) becomes its `__module__`, alive as long as the builtin."""
        return self._new(self._def_address, dims, keep)


_lock = threading.Lock()
_code: list = []


def plan_code(gate_address: int) -> PlanCode:
    """The process's compiled plan follower (built on first use, ~10 ms)."""
    if not _code:
        with _lock:
            if not _code:
                _code.append(PlanCode(gate_address))
    return _code[0]
