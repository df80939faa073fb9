"""Prepared layer records: the constants of one operator family, computed once from the IR.

As TFLite Micro's ``OpData``: a pure ``prepare_*(node, graph)`` reads a node's tensors and
attributes and returns a frozen record (quantization multipliers and shifts, zero points,
shapes, padding, the activation's clamp range). The reference runtime's layers and every
Cortex-M kernel generator take their numbers from the same record, so each is computed in
one place and the generated C agrees with the reference by construction.

One spelling per concept across the records: ``in_zp`` / ``out_zp`` (``a_zp`` / ``b_zp`` for
the two operands of a binary operator), ``mult`` / ``shift`` (a quantized multiplier, per
channel or scalar, prefixed by the operand it scales: ``a_mult``), ``act_min`` / ``act_max``
(the output's clamp range, integers for quantized records, floats for float ones),
``pad_t`` / ``pad_l`` / ``pad_b`` / ``pad_r``, ``stride_h`` / ``stride_w``.
"""
