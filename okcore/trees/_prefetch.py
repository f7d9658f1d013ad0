"""A software prefetch for numba kernels that walk scattered rows (LLVM's llvm.prefetch).

A kernel whose work per row outlasts the processor's out-of-order window cannot overlap
the next row's cache misses with this row's work; asking for the next rows' cache lines a
few rows ahead does. A prefetch is a hint: it never faults and changes no result.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _prefetch(typingctx: Any, array: Any, row: Any, column: Any) -> Any:  # pragma: no cover - jit
    """Typing and code of :data:`prefetch`."""
    if not (
        isinstance(array, types.Array)
        and array.ndim == 2
        and isinstance(row, types.Integer)
        and isinstance(column, types.Integer)
    ):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array_type, row_type, column_type = signature.args
        data = context.make_array(array_type)(context, builder, args[0])
        index = context.cast(builder, args[1], row_type, types.intp)
        column = context.cast(builder, args[2], column_type, types.intp)
        pointer = cgutils.get_item_pointer2(
            context, builder, data.data, cgutils.unpack_tuple(builder, data.shape),
            cgutils.unpack_tuple(builder, data.strides), array_type.layout, [index, column],
            wraparound=False, boundscheck=False,
        )  # fmt: skip
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        prefetch = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]),
            "llvm.prefetch.p0",
        )
        # read (0), keep in all cache levels (3), data cache (1)
        builder.call(
            prefetch, [builder.bitcast(pointer, byte_pointer), int32(0), int32(3), int32(1)]
        )
        return context.get_dummy_value()

    return types.void(array, row, column), codegen


#: prefetch(array, row, column), in compiled code only: prefetch, for reading, the cache
#: line holding array[row, column] of a 2-d array (no bounds check: a hint never faults).
prefetch: Any = intrinsic(_prefetch)
