"""FusedConvChain, int8: a chain of convolutions run row by row through real ring buffers.

Each member is an ordinary int8 Conv2D layer (the same arithmetic as the unfused graph)
built for a window of ``KH`` input rows and one output row; the rows of a window are copied
from the chain input (member 0) or from the ring before the member, with padding rows held
at the input zero point (which contributes exactly nothing, as the unfused kernel's zero
padding of ``x - zp``). The order of the rows and the ring slots each reads come from
``edgenn.passes.fusion.ring.row_schedule``, computed once in ``build``: the schedule the C
kernels follow, so running it here also validates it. Every variant computes the same
integers; the variant only changes how a C kernel addresses the ring.

A chain with a residual Add (``attrs["residual"]``) adds each output row of its last member to
the same row of the chain input with the Add's own int8 layer (the unfused arithmetic).
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.ref.kernels.common import per_tensor
from edgenn.backends.ref.layer import Layer, layer_class, register
from edgenn.ir import DType, Graph, Node, Tensor
from edgenn.passes.fusion.chains import Chain, ConvGeom, make_chain
from edgenn.passes.fusion.ring import ring_bytes, ring_rows, row_schedule


def _residual_layer(add: Node, tensor: dict[str, Tensor]) -> Layer:
    """The residual Add as its own int8 layer (operands in the Add's order)."""
    g = Graph(f"{add.name}:residual", {n: tensor[n] for n in (*add.inputs, *add.outputs)},
              (add,), tuple(add.inputs), tuple(add.outputs))
    return layer_class(add, g)(add, g)


def _row_layer(member: Node, geom: ConvGeom, tensor: dict[str, Tensor]) -> Layer:
    """``member`` as a Conv2D layer over a ``KH``-row window giving one output row."""
    x, y = tensor[member.inputs[0]], tensor[member.outputs[0]]
    _, w_in, c_in = geom.in_hwc
    _, w_out, c_out = geom.out_hwc
    xw = x.with_(name="window", shape=(1, geom.kh, w_in, c_in))
    yw = y.with_(name="row", shape=(1, 1, w_out, c_out))
    consts = {n: tensor[n] for n in member.inputs[1:] if n}
    pt, pl, pb, pr = geom.pads
    node = member.with_(inputs=("window", *member.inputs[1:]), outputs=("row",)).with_attrs(
        pads=(0, pl, 0, pr))  # why: vertical padding is already in the window's rows
    g = Graph(f"{member.name}:row", {"window": xw, "row": yw, **consts}, (node,), ("window",),
              ("row",))
    return layer_class(node, g)(node, g)


@register("FusedConvChain", DType.INT8)
class FusedConvChain(Layer):
    """Runs the members of a fused chain row by row; bit-exact with the unfused layers."""

    def build(self) -> None:
        tensor: dict[str, Tensor] = {t.name: t for t in self.inputs if t is not None}
        tensor.update({t.name: t for t in self.node.attr("intermediates")})
        tensor.update({t.name: t for t in self.outputs})
        residual = self.node.attr("residual", None)
        self.chain: Chain = make_chain(tensor.__getitem__, self.node.attr("members"), residual)
        self.residual = None if residual is None else _residual_layer(residual, tensor)
        self.rows = [_row_layer(m, g, tensor) for m, g in zip(self.chain.members,
                                                             self.chain.geoms, strict=True)]
        feeds = (self.chain.input, *self.chain.intermediates)
        self.zps = [per_tensor(self, t, "input").zp for t in feeds]
        self.ring_shapes = [(ring_rows(g), g.in_hwc[1], g.in_hwc[2]) for g in self.chain.geoms[1:]]
        self.steps = row_schedule(self.chain)
        self.scratch_bytes = ring_bytes(self.chain)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        n = x.shape[0]
        rings = [np.empty((n, *shape), np.int8) for shape in self.ring_shapes]
        oh, ow, co = self.chain.geoms[-1].out_hwc
        out = np.empty((n, oh, ow, co), np.int8)
        windows = [np.empty((n, g.kh, g.in_hwc[1], g.in_hwc[2]), np.int8)
                   for g in self.chain.geoms]
        last = len(self.rows) - 1
        for step in self.steps:
            k = step.member
            src = x if k == 0 else rings[k - 1]
            win = windows[k]
            for ky, row in enumerate(step.sources):
                if row < 0:
                    win[:, ky] = self.zps[k]
                else:
                    win[:, ky] = src[:, row]
            res = self.rows[k].run(win)[0][:, 0]
            if k == last:
                out[:, step.dest] = res
            else:
                rings[k][:, step.dest] = res
        if self.residual is not None:
            # element-wise: row by row or all at once gives the same integers
            a, b = self.residual.node.inputs
            operands = {self.chain.conv_output.name: out, self.chain.input.name: x}
            out = self.residual.run(operands[a], operands[b])[0]
        return [out]
