"""The plan follower's reading of a PyTorch tensor argument (layout.OP_TENSOR), as LLVM IR text
that plan_code.py compiles into the same module.

Why through the tensor's own attributes: torch does not promise the layout of its C structures,
so the code reads what Python code reads (`dtype`, `requires_grad`, `layout`, `is_cuda` or
`is_cpu`, `is_neg()`, `is_conj()` for complex dtypes, `get_device()` where several GPUs are
seen, `shape`, `stride()`, `data_ptr()`), each
one C-API call into torch's C getters and methods (no Python frame runs), compared with the
facts the plan holds.
It accepts exactly the tensors runtime/torch_tensors.geometry reads and the Python path would pack
the same way for this kernel type: a plain tensor not requiring grad, strided, no pending
negation or conjugation bit, of the dtype seen, on the target's device (where the process sees
several GPUs, the launch context's: get_device()), of the ndim and kernel
layout seen (numpy's contiguity rules, as typeof applies them), its data aligned to its element
size and not at address 0 (elements without memory: a meta tensor, a freed storage). Anything
else declines (1), and a raising attribute (a tensor without storage, say) fails
(2, its exception left for the caller to clear): the Python path then says what is wrong.

`@tensor_arg(arg, record, dest)` returns 0 once it has written the data pointer (0 for an empty
tensor, as geometry gives), the extents and the byte strides into the `1 + 2 * ndim` slots at
`dest`.
"""

from __future__ import annotations

# attribute and method names the code passes to PyObject_GetAttr / PyObject_VectorcallMethod:
# module constants, so the str objects whose addresses are compiled in stay alive
NAMES = {"DTYPE_NAME": "dtype", "GRAD_NAME": "requires_grad", "LAYOUT_NAME": "layout",
         "NEG_NAME": "is_neg", "CONJ_NAME": "is_conj", "SHAPE_NAME": "shape",
         "STRIDE_NAME": "stride", "DATA_PTR_NAME": "data_ptr", "GET_DEVICE_NAME": "get_device"}


def _compare(label: str, fetch: str, want: str, then: str) -> str:
    """A block `label` that fetches one object (a new reference), drops the reference (the
    objects compared are torch's singletons, alive without it) and goes to `then` if it is the
    object `want`, else declines; a NULL fetch fails."""
    return f"""{label}:
  %{label}_v = {fetch}
  %{label}_null = icmp eq ptr %{label}_v, null
  br i1 %{label}_null, label %fail, label %{label}_got
{label}_got:
  call void @decref(ptr %{label}_v)
  %{label}_ok = icmp eq ptr %{label}_v, {want}
  br i1 %{label}_ok, label %{then}, label %decline
"""


def _int_method(label: str, name: str, convert: str, then: str) -> str:
    """Blocks `label`.. calling the tensor's method `name` with no arguments and reading the
    result as an integer (`convert`: @as_i64 or @as_u64) into %{label}_v, then going to `then`;
    a NULL result, or -1 with an exception set, fails."""
    return f"""{label}:
  %{label}_obj = call ptr @method0(ptr %arg, ptr {name})
  %{label}_null = icmp eq ptr %{label}_obj, null
  br i1 %{label}_null, label %fail, label %{label}_got
{label}_got:
  %{label}_v = call i64 @{convert}(ptr %{label}_obj)
  call void @decref(ptr %{label}_obj)
  %{label}_m1 = icmp eq i64 %{label}_v, -1
  br i1 %{label}_m1, label %{label}_check, label %{then}
{label}_check:
  %{label}_err = call ptr @err_occurred()
  %{label}_clean = icmp eq ptr %{label}_err, null
  br i1 %{label}_clean, label %{then}, label %fail
"""


def _checks() -> str:
    attr = "call ptr @getattr(ptr %arg, ptr {})".format
    method = "call ptr @method0(ptr %arg, ptr {})".format
    steps = [("dtype", attr("$DTYPE_NAME"), "%want_dtype"),
             ("grad", attr("$GRAD_NAME"), "$FALSE"),
             ("layout_obj", attr("$LAYOUT_NAME"), "%strided"),
             ("device", attr("%device_flag"), "$TRUE"),
             ("neg", method("$NEG_NAME"), "$FALSE"),
             ("conj", method("$CONJ_NAME"), "$FALSE")]
    nexts = [label for label, *_ in steps[1:5]] + ["conj_gate", "ordinal_gate"]
    gate = """conj_gate:
  br i1 %is_complex, label %conj, label %ordinal_gate
"""  # (torch.conj of a real tensor is the tensor: only complex ones carry the bit)
    blocks = [_compare(label, fetch, want, then)
              for (label, fetch, want), then in zip(steps, nexts, strict=True)]
    return "".join(blocks[:5]) + gate + blocks[5] + _ORDINAL


# get_device(): the tensor's GPU, compared with the plan's ordinal - a tensor on another GPU
# than the launch context's would be an illegal address there. Only where the process sees
# several GPUs (the ordinal is -1 otherwise, and on the CPU target, where is_cpu says all):
# the call costs ~0.2 us per tensor
_ORDINAL = """ordinal_gate:
  %several_gpus = icmp sge i64 %want_ordinal, 0
  br i1 %several_gpus, label %ordinal, label %shape
""" + _int_method("ordinal", "$GET_DEVICE_NAME", "as_i64", "ordinal_compare") + """\
ordinal_compare:
  %ordinal_ok = icmp eq i64 %ordinal_v, %want_ordinal
  br i1 %ordinal_ok, label %shape, label %decline
"""


def _contiguity(name: str, first: str, step: str, stop: str) -> str:
    """Blocks `{name}loop`.. computing %{name}_is: whether the extents and byte strides at
    %dest are contiguous walking the axes from `first` by `step` to `stop` (numpy's rule:
    extent-1 axes are skipped). Entered from %axes_done; leaves to %{name}_end."""
    return f"""{name}loop:
  %{name}k = phi i64 [{first}, %{name}_start], [%{name}knext, %{name}mul]
  %{name}exp = phi i64 [%itemsize, %{name}_start], [%{name}expnext, %{name}mul]
  %{name}done = icmp eq i64 %{name}k, {stop}
  br i1 %{name}done, label %{name}_end, label %{name}body
{name}body:
  %{name}e_i = add i64 %{name}k, 1
  %{name}e_p = getelementptr i64, ptr %dest, i64 %{name}e_i
  %{name}e = load i64, ptr %{name}e_p, align 1
  %{name}s_i = add i64 %{name}e_i, %n
  %{name}s_p = getelementptr i64, ptr %dest, i64 %{name}s_i
  %{name}s = load i64, ptr %{name}s_p, align 1
  %{name}one = icmp eq i64 %{name}e, 1
  %{name}match = icmp eq i64 %{name}s, %{name}exp
  %{name}fine = or i1 %{name}one, %{name}match
  br i1 %{name}fine, label %{name}mul, label %{name}_end
{name}mul:
  %{name}expnext = mul i64 %{name}exp, %{name}e
  %{name}knext = add i64 %{name}k, {step}
  br label %{name}loop
{name}_end:
  %{name}_is = phi i1 [true, %{name}loop], [false, %{name}body]
"""


_HEAD = """
define internal ptr @method0(ptr %obj, ptr %name) {
entry:
  %slot = alloca ptr, align 8
  store ptr %obj, ptr %slot, align 8
  %r = call ptr @vectorcall_method(ptr %name, ptr %slot, i64 1, ptr null)
  ret ptr %r
}

define internal i64 @tensor_arg(ptr %arg, ptr %rec, ptr %dest) {
entry:
  %want_dtype_p = getelementptr i8, ptr %rec, i64 $A_EXTRA
  %want_dtype = load ptr, ptr %want_dtype_p, align 1
  %n_p = getelementptr i8, ptr %rec, i64 $A_COUNT
  %n = load i64, ptr %n_p, align 1
  %facts_p = getelementptr i8, ptr %rec, i64 $A_AUX
  %facts = load ptr, ptr %facts_p, align 1
  %strided_p = getelementptr i8, ptr %facts, i64 $T_STRIDED
  %strided = load ptr, ptr %strided_p, align 1
  %size_class_p = getelementptr i8, ptr %facts, i64 $T_SIZE_CLASS
  %size_class = load ptr, ptr %size_class_p, align 1
  %device_flag_p = getelementptr i8, ptr %facts, i64 $T_DEVICE_FLAG
  %device_flag = load ptr, ptr %device_flag_p, align 1
  %itemsize_p = getelementptr i8, ptr %facts, i64 $T_ITEMSIZE
  %itemsize = load i64, ptr %itemsize_p, align 1
  %want_layout_p = getelementptr i8, ptr %facts, i64 $T_LAYOUT
  %want_layout = load i64, ptr %want_layout_p, align 1
  %want_ordinal_p = getelementptr i8, ptr %facts, i64 $T_ORDINAL
  %want_ordinal = load i64, ptr %want_ordinal_p, align 1
  %complex_p = getelementptr i8, ptr %facts, i64 $T_COMPLEX
  %complex = load i64, ptr %complex_p, align 1
  %is_complex = icmp ne i64 %complex, 0
  br label %dtype
"""

# shape (a torch.Size, laid out as a tuple) and stride() (a tuple): both held until every
# axis is read; then the contiguity, the layout, the data pointer
_GEOMETRY = """shape:
  %size = call ptr @getattr(ptr %arg, ptr $SHAPE_NAME)
  %size_null = icmp eq ptr %size, null
  br i1 %size_null, label %fail, label %size_got
size_got:
  %size_cls_p = getelementptr i8, ptr %size, i64 $OB_TYPE
  %size_cls = load ptr, ptr %size_cls_p, align 1
  %size_cls_ok = icmp eq ptr %size_cls, %size_class
  %size_n_p = getelementptr i8, ptr %size, i64 $TUPLE_SIZE
  %size_n = load i64, ptr %size_n_p, align 1
  %size_n_ok = icmp eq i64 %size_n, %n
  %size_ok = and i1 %size_cls_ok, %size_n_ok
  br i1 %size_ok, label %strides, label %decline_size
strides:
  %steps = call ptr @method0(ptr %arg, ptr $STRIDE_NAME)
  %steps_null = icmp eq ptr %steps, null
  br i1 %steps_null, label %fail_size, label %steps_got
steps_got:
  %steps_cls_p = getelementptr i8, ptr %steps, i64 $OB_TYPE
  %steps_cls = load ptr, ptr %steps_cls_p, align 1
  %steps_cls_ok = icmp eq ptr %steps_cls, $TUPLE
  %steps_n_p = getelementptr i8, ptr %steps, i64 $TUPLE_SIZE
  %steps_n = load i64, ptr %steps_n_p, align 1
  %steps_n_ok = icmp eq i64 %steps_n, %n
  %steps_ok = and i1 %steps_cls_ok, %steps_n_ok
  br i1 %steps_ok, label %axes, label %decline_both
axes:
  %k = phi i64 [0, %steps_got], [%knext, %axis_store]
  %empty = phi i1 [false, %steps_got], [%empty_next, %axis_store]
  %kdone = icmp eq i64 %k, %n
  br i1 %kdone, label %axes_done, label %axis
axis:
  %item_byte = mul i64 %k, 8
  %item_off = add i64 %item_byte, $TUPLE_ITEMS
  %extent_obj_p = getelementptr i8, ptr %size, i64 %item_off
  %extent_obj = load ptr, ptr %extent_obj_p, align 1
  %extent = call i64 @as_i64(ptr %extent_obj)
  %step_obj_p = getelementptr i8, ptr %steps, i64 %item_off
  %step_obj = load ptr, ptr %step_obj_p, align 1
  %step = call i64 @as_i64(ptr %step_obj)
  %extent_m1 = icmp eq i64 %extent, -1
  %step_m1 = icmp eq i64 %step, -1
  %either_m1 = or i1 %extent_m1, %step_m1
  br i1 %either_m1, label %axis_check, label %axis_store
axis_check:
  %axis_err = call ptr @err_occurred()
  %axis_clean = icmp eq ptr %axis_err, null
  br i1 %axis_clean, label %axis_store, label %fail_both
axis_store:
  %extent_i = add i64 %k, 1
  %extent_d = getelementptr i64, ptr %dest, i64 %extent_i
  store i64 %extent, ptr %extent_d, align 1
  %bytes = mul i64 %step, %itemsize
  %step_i = add i64 %extent_i, %n
  %step_d = getelementptr i64, ptr %dest, i64 %step_i
  store i64 %bytes, ptr %step_d, align 1
  %is_zero = icmp eq i64 %extent, 0
  %empty_next = or i1 %empty, %is_zero
  %knext = add i64 %k, 1
  br label %axes
axes_done:
  call void @decref(ptr %size)
  call void @decref(ptr %steps)
  br i1 %empty, label %layout_known, label %c_start
c_start:
  %c_first = sub i64 %n, 1
  br label %cloop
"""

_LAYOUT = """f_start:
  br label %floop
"""

_TAIL = """layout_known:
  %is_c = phi i1 [true, %axes_done], [%c_is, %f_end]
  %is_f = phi i1 [true, %axes_done], [%f_is, %f_end]
  %several = icmp sgt i64 %n, 1
  %f_counts = and i1 %is_f, %several
  %f_or_a = select i1 %f_counts, i64 1, i64 2
  %layout = select i1 %is_c, i64 0, i64 %f_or_a
  %layout_ok = icmp eq i64 %layout, %want_layout
  br i1 %layout_ok, label %pointer, label %decline
pointer:
  br i1 %empty, label %store_pointer, label %data_ptr
""" + _int_method("data_ptr", "$DATA_PTR_NAME", "as_u64", "aligned") + """\
aligned:
  %misaligned = urem i64 %data_ptr_v, %itemsize
  %is_aligned = icmp eq i64 %misaligned, 0
  %has_memory = icmp ne i64 %data_ptr_v, 0
  %usable = and i1 %is_aligned, %has_memory
  br i1 %usable, label %store_pointer, label %decline
store_pointer:
  %address = phi i64 [0, %pointer], [%data_ptr_v, %aligned]
  store i64 %address, ptr %dest, align 1
  ret i64 0
decline_both:
  call void @decref(ptr %steps)
  br label %decline_size
decline_size:
  call void @decref(ptr %size)
  br label %decline
fail_both:
  call void @decref(ptr %steps)
  br label %fail_size
fail_size:
  call void @decref(ptr %size)
  br label %fail
decline:
  ret i64 1
fail:
  ret i64 2
}
"""

# C order walks the axes from the last, Fortran order from the first; the layout is then C,
# F (ndim > 1 only) or A, as runtime/arrayview.layout_of says
TENSOR_IR = (_HEAD + _checks() + _GEOMETRY + _contiguity("c", "%c_first", "-1", "-1")
             + "  br label %f_start\n" + _LAYOUT + _contiguity("f", "0", "1", "%n")
             + "  br label %layout_known\n" + _TAIL)
