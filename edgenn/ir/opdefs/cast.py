"""Cast: element-wise conversion of the stored values to another element type.

==========  ======  ===================================================================
op          inputs  attrs
==========  ======  ===================================================================
Cast        x       to (an element type name: "float32", "int32", "int16", "int8", ...)
==========  ======  ===================================================================

TFLite's CAST converts stored values as C's ``static_cast`` does, ignoring any
quantization: a float becomes an integer by truncation toward zero, a bool becomes 0 or 1,
a wider integer wraps to a narrower one.
"""

from __future__ import annotations

from edgenn.ir.dtypes import DType
from edgenn.ir.node import Node
from edgenn.ir.schema import define_op
from edgenn.ir.shape_rules import Inferred, fail, need, register_shape
from edgenn.ir.tensor import Tensor

CASTABLE = (DType.FLOAT32, DType.INT8, DType.UINT8, DType.INT16, DType.INT32, DType.INT64,
            DType.BOOL)
define_op("Cast", "element-wise conversion of the stored values to another type", CASTABLE,
          required=("to",), tflite=("CAST",))


@register_shape("Cast")
def _cast(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    to = {t.value: t for t in CASTABLE}.get(str(node.attr("to")))
    if to is None:
        raise fail(node, f"to must be one of {', '.join(t.value for t in CASTABLE)}, "
                         f"got {node.attr('to')!r}")
    return [(x.shape, to)]
