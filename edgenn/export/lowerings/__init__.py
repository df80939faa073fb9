"""Lowerings of the operator groups beyond the core set in ``export/ops.py``; importing this
package registers them in ``ops.LOWER``."""

from edgenn.export.lowerings import conv_transpose, elementwise, movement, reduce

__all__ = ["conv_transpose", "elementwise", "movement", "reduce"]
