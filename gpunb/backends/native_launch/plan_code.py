"""The machine code behind every native launcher: one function, compiled once per process, that
follows a launch plan (layout.py's structures, filled in by runtime/native_pack.py).

One fixed function rather than code per kernel because an MCJIT compile costs ~10 ms; a plan is
filled in microseconds. The function is a METH_O builtin `f(args)` whose `self` is a bytes object
holding a `Binding` (layout.py): which plan, the dispatcher's version word and the value it
launches at, the watch list, the launch configuration. It

- declines (layout.DECLINED) unless it runs on the plan's thread, the version word still reads
  the bound value, every watched name is still bound to the object seen (PyDict_GetItem and an
  identity compare per entry), the argument count matches and each argument is of the kind seen;
- writes every argument into its parameter slots (layout.py's OP_* say how; a torch tensor is
  read by tensor_code.py's function, compiled into the same module);
- returns layout.PACKED where the binding has no launch function (the caller runs the program), or
  stores the kernel function into the last-launch word, calls the launch function with the
  bound configuration, the GIL released, and returns its CUresult.

Anything unexpected declines with no Python exception left set, so the native code never raises:
the Python path (which checks everything) raises the right error. Every offset below comes from
layout.py, the C-API functions are called through their addresses (no symbol resolution in the
JIT), and the IR is written out as text with `$NAME` placeholders filled in by `_source`.
"""

from __future__ import annotations

import ctypes
import functools
import string

from gpunb.backends.native_launch import layout as L
from gpunb.backends.native_launch import tensor_code
from gpunb.backends.native_launch.builtins import CompiledFunction
from gpunb.foundation import forksafe

_KEY_NAME = "_key"  # gpunb arrays' interned type key and parameter-slot tuple (runtime/)
_SLOTS_NAME = "_slots"

_IR = string.Template("""
define ptr @gpunb_plan_launch(ptr %self, ptr %args) {
entry:
  %binding = getelementptr i8, ptr %self, i64 $BYTES_DATA
  %plan_p = getelementptr i8, ptr %binding, i64 $B_PLAN
  %plan = load ptr, ptr %plan_p, align 1
  %owner_p = getelementptr i8, ptr %plan, i64 $P_OWNER_THREAD
  %owner = load i64, ptr %owner_p, align 1
  %tid = call i64 @tid()
  %mine = icmp eq i64 %tid, %owner
  br i1 %mine, label %version, label %decline
version:
  %word_p = getelementptr i8, ptr %binding, i64 $B_VERSION_WORD
  %word = load ptr, ptr %word_p, align 1
  %now = load i64, ptr %word, align 8
  %want_p = getelementptr i8, ptr %binding, i64 $B_VERSION
  %want = load i64, ptr %want_p, align 1
  %current = icmp eq i64 %now, %want
  br i1 %current, label %count, label %decline
count:
  %nargs_p = getelementptr i8, ptr %plan, i64 $P_NARGS
  %nargs = load i64, ptr %nargs_p, align 1
  %given_p = getelementptr i8, ptr %args, i64 $TUPLE_SIZE
  %given = load i64, ptr %given_p, align 1
  %count_ok = icmp eq i64 %given, %nargs
  %watch_p = getelementptr i8, ptr %binding, i64 $B_WATCH
  %watch = load ptr, ptr %watch_p, align 1
  %nwatch_p = getelementptr i8, ptr %binding, i64 $B_NWATCH
  %nwatch = load i64, ptr %nwatch_p, align 1
  %records_p = getelementptr i8, ptr %plan, i64 $P_ARGS
  %records = load ptr, ptr %records_p, align 1
  br i1 %count_ok, label %watchloop, label %decline
watchloop:
  %wi = phi i64 [0, %count], [%wnext, %wbody]
  %wdone = icmp eq i64 %wi, %nwatch
  br i1 %wdone, label %argloop, label %wbody
wbody:
  %wbyte = mul i64 %wi, $WATCH_SIZE
  %entry_p = getelementptr i8, ptr %watch, i64 %wbyte
  %wd_p = getelementptr i8, ptr %entry_p, i64 $W_NAMESPACE
  %wd = load ptr, ptr %wd_p, align 1
  %wn_p = getelementptr i8, ptr %entry_p, i64 $W_NAME
  %wn = load ptr, ptr %wn_p, align 1
  %wo_p = getelementptr i8, ptr %entry_p, i64 $W_SEEN
  %wo = load ptr, ptr %wo_p, align 1
  %got = call ptr @dict_get(ptr %wd, ptr %wn)
  %wsame = icmp eq ptr %got, %wo
  %wnext = add i64 %wi, 1
  br i1 %wsame, label %watchloop, label %decline
argloop:
  %ai = phi i64 [0, %watchloop], [%anext, %argnext]
  %adone = icmp eq i64 %ai, %nargs
  br i1 %adone, label %done, label %argbody
argbody:
  %rec_byte = mul i64 %ai, $ARG_SIZE
  %rec = getelementptr i8, ptr %records, i64 %rec_byte
  %item_byte = mul i64 %ai, 8
  %item_off = add i64 %item_byte, $TUPLE_ITEMS
  %item_p = getelementptr i8, ptr %args, i64 %item_off
  %arg = load ptr, ptr %item_p, align 1
  %acls_p = getelementptr i8, ptr %arg, i64 $OB_TYPE
  %acls = load ptr, ptr %acls_p, align 1
  %cls_p = getelementptr i8, ptr %rec, i64 $A_CLS
  %cls = load ptr, ptr %cls_p, align 1
  %cls_ok = icmp eq ptr %acls, %cls
  br i1 %cls_ok, label %dispatch, label %decline
dispatch:
  %op_p = getelementptr i8, ptr %rec, i64 $A_OP
  %op = load i64, ptr %op_p, align 1
  %extra_p = getelementptr i8, ptr %rec, i64 $A_EXTRA
  %extra = load ptr, ptr %extra_p, align 1
  %n_p = getelementptr i8, ptr %rec, i64 $A_COUNT
  %n = load i64, ptr %n_p, align 1
  %dest_p = getelementptr i8, ptr %rec, i64 $A_DEST
  %dest = load ptr, ptr %dest_p, align 1
  switch i64 %op, label %decline [i64 $OP_RAW, label %raw
                                  i64 $OP_INT64, label %int64
                                  i64 $OP_BOOL, label %bool
                                  i64 $OP_SLOTS, label %slots
                                  i64 $OP_NDARRAY, label %ndarray
                                  i64 $OP_TENSOR, label %tensor]
tensor:
  %tensor_status = call i64 @tensor_arg(ptr %arg, ptr %rec, ptr %dest)
  switch i64 %tensor_status, label %fail [i64 0, label %argnext
                                          i64 1, label %decline]
raw:
  br label %rawloop
rawloop:
  %rb = phi i64 [0, %raw], [%rbnext, %rawbody]
  %rbdone = icmp eq i64 %rb, %n
  br i1 %rbdone, label %argnext, label %rawbody
rawbody:
  %rsrc_i = add i64 %rb, $VALUE_DATA
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
  %is_true = icmp eq ptr %arg, $TRUE
  %byte = zext i1 %is_true to i8
  store i8 %byte, ptr %dest
  br label %argnext
slots:
  %key = call ptr @getattr(ptr %arg, ptr $KEY_NAME)
  %key_null = icmp eq ptr %key, null
  br i1 %key_null, label %fail, label %slots_key
slots_key:
  call void @decref(ptr %key)
  %key_ok = icmp eq ptr %key, %extra
  br i1 %key_ok, label %slots_get, label %decline
slots_get:
  %tup = call ptr @getattr(ptr %arg, ptr $SLOTS_NAME)
  %tup_null = icmp eq ptr %tup, null
  br i1 %tup_null, label %fail, label %slots_tuple
slots_tuple:
  call void @decref(ptr %tup)
  %tcls_p = getelementptr i8, ptr %tup, i64 $OB_TYPE
  %tcls = load ptr, ptr %tcls_p, align 1
  %tcls_ok = icmp eq ptr %tcls, $TUPLE
  br i1 %tcls_ok, label %slots_size, label %decline
slots_size:
  %tsize_p = getelementptr i8, ptr %tup, i64 $TUPLE_SIZE
  %tsize = load i64, ptr %tsize_p, align 1
  %tsize_ok = icmp eq i64 %tsize, %n
  br i1 %tsize_ok, label %sloop, label %decline
sloop:
  %sk = phi i64 [0, %slots_size], [%sknext, %sstore]
  %sdone = icmp eq i64 %sk, %n
  br i1 %sdone, label %argnext, label %sbody
sbody:
  %sitem_byte = mul i64 %sk, 8
  %sitem_off = add i64 %sitem_byte, $TUPLE_ITEMS
  %sitem_p = getelementptr i8, ptr %tup, i64 %sitem_off
  %sitem = load ptr, ptr %sitem_p, align 1
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
  %descr_p = getelementptr i8, ptr %arg, i64 $NP_DESCR
  %descr = load ptr, ptr %descr_p, align 1
  %descr_ok = icmp eq ptr %descr, %extra
  %nd_p = getelementptr i8, ptr %arg, i64 $NP_ND
  %nd32 = load i32, ptr %nd_p, align 1
  %nd = sext i32 %nd32 to i64
  %nd_ok = icmp eq i64 %nd, %n
  %flags_p = getelementptr i8, ptr %arg, i64 $NP_FLAGS
  %flags32 = load i32, ptr %flags_p, align 1
  %flags_m = and i32 %flags32, $NPY_FLAGS
  %flags = zext i32 %flags_m to i64
  %want_flags_p = getelementptr i8, ptr %rec, i64 $A_FLAGS
  %want_flags = load i64, ptr %want_flags_p, align 1
  %flags_ok = icmp eq i64 %flags, %want_flags
  %nd_both = and i1 %descr_ok, %nd_ok
  %nd_all = and i1 %nd_both, %flags_ok
  br i1 %nd_all, label %nd_copy, label %decline
nd_copy:
  %data_p = getelementptr i8, ptr %arg, i64 $NP_DATA
  %data = load i64, ptr %data_p, align 1
  store i64 %data, ptr %dest, align 1
  %dims_p = getelementptr i8, ptr %arg, i64 $NP_DIMENSIONS
  %dims = load ptr, ptr %dims_p, align 1
  %strides_p = getelementptr i8, ptr %arg, i64 $NP_STRIDES
  %strides = load ptr, ptr %strides_p, align 1
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
  %launch_p = getelementptr i8, ptr %binding, i64 $B_LAUNCH_FUNCTION
  %launch = load ptr, ptr %launch_p, align 1
  %pack_only = icmp eq ptr %launch, null
  %fn_p = getelementptr i8, ptr %binding, i64 $B_KERNEL_FUNCTION
  %fn = load i64, ptr %fn_p, align 1
  br i1 %pack_only, label %packed, label %name
packed:
  %packed_r = call ptr @from_long(i64 $PACKED)
  ret ptr %packed_r
name:
  %last_p = getelementptr i8, ptr %binding, i64 $B_LAST_LAUNCH
  %last = load ptr, ptr %last_p, align 1
  %no_last = icmp eq ptr %last, null
  br i1 %no_last, label %go, label %set_last
set_last:
  store i64 %fn, ptr %last, align 8
  br label %go
go:
  %params_p = getelementptr i8, ptr %plan, i64 $P_PARAMS
  %params = load i64, ptr %params_p, align 1
  %gx_p = getelementptr i8, ptr %binding, i64 $B_GRID_X
  %gx = load i32, ptr %gx_p, align 1
  %gy_p = getelementptr i8, ptr %binding, i64 $B_GRID_Y
  %gy = load i32, ptr %gy_p, align 1
  %gz_p = getelementptr i8, ptr %binding, i64 $B_GRID_Z
  %gz = load i32, ptr %gz_p, align 1
  %bx_p = getelementptr i8, ptr %binding, i64 $B_BLOCK_X
  %bx = load i32, ptr %bx_p, align 1
  %by_p = getelementptr i8, ptr %binding, i64 $B_BLOCK_Y
  %by = load i32, ptr %by_p, align 1
  %bz_p = getelementptr i8, ptr %binding, i64 $B_BLOCK_Z
  %bz = load i32, ptr %bz_p, align 1
  %sh_p = getelementptr i8, ptr %binding, i64 $B_SHARED_BYTES
  %sh = load i32, ptr %sh_p, align 1
  %st_p = getelementptr i8, ptr %binding, i64 $B_STREAM
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
  %no = call ptr @from_long(i64 $DECLINED)
  ret ptr %no
}
""")

# the C-API functions the code calls: helper name -> (return type, parameter types, symbol)
_FUNCTIONS = {"tid": ("i64", "", "PyThread_get_thread_ident"),
              "dict_get": ("ptr", "ptr, ptr", "PyDict_GetItem"),
              "getattr": ("ptr", "ptr, ptr", "PyObject_GetAttr"),
              "decref": ("void", "ptr", "Py_DecRef"),
              "as_i64": ("i64", "ptr", "PyLong_AsLongLong"),
              "as_u64": ("i64", "ptr", "PyLong_AsUnsignedLongLong"),
              "err_occurred": ("ptr", "", "PyErr_Occurred"),
              "err_clear": ("void", "", "PyErr_Clear"),
              "from_long": ("ptr", "i64", "PyLong_FromLong"),
              "vectorcall_method": ("ptr", "ptr, ptr, i64, ptr", "PyObject_VectorcallMethod"),
              "save_thread": ("ptr", "", "PyEval_SaveThread"),
              "restore_thread": ("void", "ptr", "PyEval_RestoreThread")}


# the structures whose field offsets the IR names: `$B_PLAN` is Binding.plan's offset
_STRUCTURES = {"B": L.Binding, "P": L.PlanHeader, "A": L.ArgRecord, "W": L.WatchEntry,
               "NP": L.NumpyArrayHead, "OB": L.ObjectHead, "TUPLE": L.TupleHead,
               "T": L.TensorFacts}


def _offsets() -> dict:
    """Every `$NAME` of the IR that is a layout fact, read from layout.py."""
    names = {f"{prefix}_{name.upper()}": L.offset(structure, name)
             for prefix, structure in _STRUCTURES.items()
             for name, *_ in structure._fields_}
    for axis, step in zip("XYZ", (0, 4, 8), strict=True):  # u32 x 3
        names[f"B_GRID_{axis}"] = names["B_GRID"] + step
        names[f"B_BLOCK_{axis}"] = names["B_BLOCK"] + step
    names.update(BYTES_DATA=L.BYTES_DATA, TUPLE_ITEMS=L.TUPLE_ITEMS, VALUE_DATA=L.VALUE_DATA,
                 ARG_SIZE=ctypes.sizeof(L.ArgRecord), WATCH_SIZE=ctypes.sizeof(L.WatchEntry),
                 OP_RAW=L.OP_RAW, OP_INT64=L.OP_INT64, OP_BOOL=L.OP_BOOL, OP_SLOTS=L.OP_SLOTS,
                 OP_NDARRAY=L.OP_NDARRAY, OP_TENSOR=L.OP_TENSOR, NPY_FLAGS=L.NPY_FLAGS,
                 PACKED=L.PACKED, DECLINED=L.DECLINED)
    return names


def _source() -> str:
    """The module text: the plan follower with every offset and address filled in, and one tiny
    helper per C-API function (a direct call through a constant pointer, inlined or not)."""
    def pointer(address: int) -> str:
        return f"inttoptr (i64 {address} to ptr)"

    objects = {"TRUE": pointer(id(True)), "FALSE": pointer(id(False)),
               "TUPLE": pointer(id(tuple)), "KEY_NAME": pointer(id(_KEY_NAME)),
               "SLOTS_NAME": pointer(id(_SLOTS_NAME)),
               **{key: pointer(id(name)) for key, name in tensor_code.NAMES.items()}}
    text = string.Template(_IR.template + tensor_code.TENSOR_IR).substitute(_offsets(),
                                                                             **objects)
    for name, (ret, params, symbol) in _FUNCTIONS.items():
        address = ctypes.cast(getattr(ctypes.pythonapi, symbol), ctypes.c_void_p).value
        args = [f"{ty} %a{k}" for k, ty in enumerate(filter(None, params.split(", ")))]
        passed = ", ".join(args)
        call = f"call {ret} %f({passed})"
        ending = f"  {call}\n  ret void\n" if ret == "void" else \
            f"  %r = {call}\n  ret {ret} %r\n"
        text += (f"define internal {ret} @{name}({passed}) {{\n"
                 f"  %f = inttoptr i64 {address} to ptr\n{ending}}}\n")
    return text


class PlanCode:
    """The compiled plan follower; `bind(binding, keep)` makes a builtin of it."""

    def __init__(self):
        self._function = CompiledFunction(_source(), "gpunb_plan_launch", "gpunb_native_launch",
                                          fastcall=False)

    def bind(self, binding: L.Binding, keep):
        """A builtin `f(args) -> int` following `binding` (copied into an immutable bytes
        object, its `self`); `keep` (which must keep the plan, the watch list and the version
        word alive) becomes its `__module__`, alive as long as the builtin."""
        return self._function.builtin(bytes(binding), keep)


_lock = forksafe.lock()  # (a launch and the background loader may ask at once: one compile)


def plan_code() -> PlanCode:
    """The process's compiled plan follower (built on first use, ~10 ms)."""
    with _lock:
        return _compiled()


@functools.cache
def _compiled() -> PlanCode:
    return PlanCode()
