"""One llvmlite module per compilation: the kernel, its device functions, shared/const globals."""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler.typed import TypedFunction
from gpunb.compiler.values import is_compile_time
from gpunb.foundation import types as t
from gpunb.foundation.abi import signature_slots


class ModuleBuilder:
    """Owns one ir.Module: the kernel, its device functions, globals for shared/const arrays.

    `lowerer_class` lowers one function body (compiler.lower.FunctionLowerer); it is passed in so
    that this module stays below the mixins that make it up.
    """

    def __init__(self, target, options: dict, name: str, lowerer_class):
        self.target = target
        self.options = options
        self.lowerer_class = lowerer_class
        self.module = ir.Module(name=name)
        self.module.triple = target.triple
        self.module.data_layout = target.data_layout
        self.device_functions: dict = {}
        self.const_arrays: dict = {}
        self.counter = 0
        self.debug = target.debug_info(self.module, full=bool(options.get("debug")))
        self.features: frozenset = frozenset()
        self.shared_static_bytes = 0
        self.raise_sites: list = []  # debug: exceptions.site_record by site id (the artifact's)
        self.links: list = []  # foreign code the module calls (cuda.declare_device's link=)
        self.foreign_cooperative = False  # that code grid-syncs (declare_device use_cooperative)

    def unique(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}.{self.counter}"

    def lower_kernel(self, typed: TypedFunction, symbol: str):
        slots = signature_slots(typed.argtypes)
        self.features = typed.all_features()
        fn, slot_values = self.target.define_kernel(self, symbol, [dm.slot_type(s) for s in slots])
        low = self.lowerer_class(self, typed, fn)
        low.begin(kernel=True)
        self.target.kernel_prologue(low)
        args, pos = [], 0
        for argtype in typed.argtypes:
            n = len(signature_slots((argtype,)))
            args.append(low.assemble_argument(argtype, slot_values[pos:pos + n]))
            pos += n
        low.bind_arguments(args)
        low.lower_body()
        low.finish()
        return fn

    def device_function(self, typed: TypedFunction) -> ir.Function:
        key = id(typed)
        fn = self.device_functions.get(key)
        if fn is not None:
            return fn
        extra = self.target.extra_params()
        ret = dm.void if isinstance(typed.return_type, t.NoneType) else \
            dm.value_type(typed.return_type)
        runtime = [a for a in typed.argtypes if not is_compile_time(a)]
        fnty = ir.FunctionType(ret, extra + [dm.value_type(a) for a in runtime])
        fn = ir.Function(self.module, fnty, self.unique(f"{typed.name}"))
        fn.linkage = "internal"
        self.device_functions[key] = fn
        low = self.lowerer_class(self, typed, fn)
        low.begin(kernel=False)
        passed = iter(fn.args[len(extra):])  # compile-time arguments are not passed
        low.bind_arguments([None if is_compile_time(a) else next(passed)
                            for a in typed.argtypes])
        low.lower_body()
        low.finish()
        return fn

    def const_array(self, builder: ir.IRBuilder, array):
        """A global numpy array frozen into constant memory (numba's semantics)."""
        return self.target.constant_data(self, builder, array)
