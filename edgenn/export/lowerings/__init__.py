"""Lowerings of the operator groups beyond the core set in ``export/ops.py``; importing this
package registers them in ``ops.LOWER``."""

from edgenn.export.lowerings import compare, conv_transpose, elementwise, movement, reduce

__all__ = ["compare", "conv_transpose", "elementwise", "movement", "reduce"]
