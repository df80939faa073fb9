"""Portable recurrent kernels: LSTM (int8 or int16 activations, bit-exact; float32) and SVDF
(int8, bit-exact; float32).

Every kernel takes its constants from the records the reference layers take too
(``edgenn.prepared.lstm`` / ``.svdf``), so the integer C is bit-exact with the reference
runtime by construction. The state inputs (constants,
or arena tensors: a stateful model's state area) are copied into the layer's scratch buffer,
which holds the running state; the optional final-state outputs (LSTM's hidden and cell state,
SVDF's new state) receive it at the end, and a stateful model keeps them for the next
invocation (``codegen/state.py``). The integer LSTM's weight rows are re-packed for SMLAD
(``simd_rows``). Generated kernels register above these on the cores they fit and leave
them as the fallbacks: ``lstm_s8_gen`` / ``lstm_s16_gen`` (DSP), ``lstm_f32_gen`` (FPU, no
peepholes), ``svdf_s8_gen`` (DSP); the GRU's is ``gru_f32_gen``.
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.ccall import (
    IN0,
    NULL,
    OUT0,
    SCRATCH,
    AddressOf,
    Arg,
    Buf,
    Local,
    c_call,
)
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    args,
    c_float,
    const_operand,
    i32,
    record_matcher,
)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.ir.opdefs.recurrent import LSTM_INDEX, sequence_dims
from edgenn.prepared.lstm import GATES, LstmParams, prepare_lstm
from edgenn.prepared.svdf import SvdfParams, prepare_svdf


def _aligned16(n: int) -> int:
    return (n + 15) // 16 * 16


def _pad4(n: int) -> int:
    return (n + 3) // 4 * 4


def simd_rows(w: np.ndarray) -> np.ndarray:
    """int8 weight rows zero-padded to a multiple of 4, each group of 4 stored w0 w2 w1 w3
    (``edgenn_lstm.h``: SXTB16 and SXTB16 ROR 8 then give the pairs (w0, w1), (w2, w3))."""
    rows, depth = w.shape
    padded = np.zeros((rows, _pad4(depth)), np.int8)
    padded[:, :depth] = w
    return np.ascontiguousarray(padded.reshape(rows, -1, 4)[:, :, [0, 2, 1, 3]]).ravel()


# -- LSTM ----------------------------------------------------------------------------------------
def _lstm_layer(node: Node, graph: Graph) -> LstmParams:
    layer = prepare_lstm(node, graph)
    if layer.integer is None:
        raise UnsupportedOperatorError(f"{node}: the Cortex-M LSTM is integer")
    if layer.integer.wide:
        for gate in layer.integer.gates:
            for bias in (gate.bias_w, gate.bias_r):
                if np.any(np.abs(bias) >= 2**31):
                    raise UnsupportedOperatorError(
                        f"{node}: int16 LSTM biases beyond int32 are not supported on Cortex-M")
    return layer


def _lstm_prepare(node: Node, graph: Graph) -> KernelCall:
    layer = _lstm_layer(node, graph)
    p = layer.integer
    assert p is not None
    x = graph.tensor(node.inputs[0])
    batch, steps, n_input = sequence_dims(x, layer.time_major)
    n_cell = layer.n_cell
    arrays: list[CArray] = []
    gate_inits = []
    for k, gate in enumerate(p.gates):
        arrays += [CArray(f"w{k}", "int8_t", simd_rows(gate.w)),
                   CArray(f"r{k}", "int8_t", simd_rows(gate.r)),
                   CArray(f"bw{k}", "int32_t", i32(gate.bias_w)),
                   CArray(f"br{k}", "int32_t", i32(gate.bias_r))]
        gate_inits.append(
            f"{{@P@_w{k}, @P@_r{k}, @P@_bw{k}, @P@_br{k}, "
            f"{args(gate.fc_w.mult, gate.fc_w.shift, gate.fc_r.mult)}, "
            f"{args(gate.fc_r.shift, int(gate.activation == 'tanh'))}}}")
    h0 = const_operand(node, graph, LSTM_INDEX["output_state"], arrays)
    c0 = const_operand(node, graph, LSTM_INDEX["cell_state"], arrays)
    om = p.output_mul
    scalars = args(p.forget_mul.mult, p.forget_mul.shift, p.input_mul.mult,
                   p.input_mul.shift, om.mult, om.shift, om.out_zp, om.act_min, om.act_max,
                   p.cell_tanh.multiplier, p.cell_tanh.shift, p.cell_clip, batch, steps,
                   n_input, n_cell, int(layer.time_major))
    code = ("static const edgenn_lstm_params @P@_params = {\n    {" + ",\n     ".join(gate_inits)
            + "},\n    " + scalars + "};")
    fn = "edgenn_lstm_s16" if p.wide else "edgenn_lstm_s8"
    finals = (Buf("out", 1), Buf("out", 2)) if layer.extra_outputs else (NULL, NULL)
    return KernelCall(
        call=c_call(fn, PARAMS, IN0, OUT0, h0, c0, *finals, SCRATCH),
        sources=("edgenn_lstm.c",), arrays=tuple(arrays), code=code,
        scratch_bytes=_aligned16(2 * (7 * _pad4(n_cell) + _pad4(n_input))),
        state_in_place=True,
        comment=f"LSTM {steps} steps x {batch} rows, {n_input} -> {n_cell}")


register_kernel(PortableKernel("LSTM", "edgenn_lstm",
                               record_matcher((DType.INT8, DType.INT16), _lstm_layer),
                               _lstm_prepare,
                               (DType.INT8, DType.INT16)))


# -- float32 LSTM --------------------------------------------------------------------------------
def _lstm_f32_prepare(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_lstm(node, graph)
    assert layer.integer is None and layer.peephole is not None
    x = graph.tensor(node.inputs[0])
    batch, steps, n_input = sequence_dims(x, layer.time_major)
    arrays: list[CArray] = []
    fields: dict[str, list[str]] = {"w": [], "r": [], "bias": [], "peephole": []}
    for k, gate in enumerate(GATES):
        arrays += [CArray(f"w{k}", "float", layer.w_f[k].T), CArray(f"r{k}", "float",
                                                                      layer.r_f[k].T),
                   CArray(f"b{k}", "float", layer.b_f[k])]
        fields["w"].append(f"@P@_w{k}")
        fields["r"].append(f"@P@_r{k}")
        fields["bias"].append(f"@P@_b{k}")
        peep = layer.peephole.get(gate)
        if peep is None:
            fields["peephole"].append("NULL")
        else:
            arrays.append(CArray(f"p{k}", "float", peep))
            fields["peephole"].append(f"@P@_p{k}")
    h0 = const_operand(node, graph, LSTM_INDEX["output_state"], arrays)
    c0 = const_operand(node, graph, LSTM_INDEX["cell_state"], arrays)
    finals = (Buf("out", 1), Buf("out", 2)) if layer.extra_outputs else (NULL, NULL)
    code = ("static const edgenn_lstm_f32_params @P@_params = {\n"
            + "".join(f"    {{{', '.join(v)}}},\n" for v in fields.values())
            + f"    {c_float(layer.cell_clip)}, {c_float(layer.gate_clip)}, "
            + args(int(layer.activation == "sigmoid"), batch, steps, n_input, layer.n_cell,
                   int(layer.time_major)) + "};")
    return KernelCall(
        call=c_call("edgenn_lstm_f32", PARAMS, IN0, OUT0, h0, c0, *finals, SCRATCH),
        sources=("edgenn_lstm_f32.c",), arrays=tuple(arrays), code=code,
        scratch_bytes=_aligned16(24 * layer.n_cell),
        state_in_place=True,
        comment=f"LSTM {steps} steps x {batch} rows, {n_input} -> {layer.n_cell}")


register_kernel(PortableKernel("LSTM", "edgenn_lstm_f32",
                               record_matcher((DType.FLOAT32,), prepare_lstm), _lstm_f32_prepare,
                               (DType.FLOAT32,)))


# -- SVDF ----------------------------------------------------------------------------------------
def _state_out(node: Node) -> Arg:
    """The new-state output, NULL when the node has none."""
    return Buf("out", 1) if len(node.outputs) == 2 else NULL


# the parameter block the layer's code defines (``@P@_params``), by address
PARAMS = AddressOf(Local("params"))


def _svdf_layer(node: Node, graph: Graph) -> SvdfParams:
    layer = prepare_svdf(node, graph)
    if layer.integer is None:
        raise UnsupportedOperatorError(f"{node}: the Cortex-M SVDF is int8")
    return layer


def _svdf_prepare(node: Node, graph: Graph) -> KernelCall:
    layer = _svdf_layer(node, graph)
    p = layer.integer
    assert p is not None
    state_t = graph.tensor(node.inputs[4])
    is16 = state_t.dtype is DType.INT16
    ctype = "int16_t" if is16 else "int8_t"
    batch, n_input = graph.tensor(node.inputs[0]).shape
    arrays = [CArray("wf", "int8_t", p.weights_feature), CArray("wt", ctype, p.weights_time),
              CArray("bias", "int32_t", i32(p.bias))]
    state0 = const_operand(node, graph, 4, arrays)
    scalars = args(batch, n_input, layer.filters, layer.memory, layer.rank, p.input_zp,
                   p.state_zp, p.output_zp, *p.scale_1, *p.scale_2, int(is16))
    code = ("static const edgenn_svdf_params @P@_params = {@P@_wf, @P@_wt, @P@_bias, "
            + scalars + "};")
    state_bytes = batch * layer.filters * layer.memory * state_t.dtype.itemsize
    scratch = _aligned16((state_bytes + 3) // 4 * 4 + 4 * layer.filters)
    return KernelCall(
        call=c_call("edgenn_svdf_s8", PARAMS, IN0, OUT0, state0, _state_out(node), SCRATCH),
        sources=("edgenn_svdf.c",), arrays=tuple(arrays), code=code, scratch_bytes=scratch,
        state_in_place=True,
        comment=f"SVDF {layer.filters} filters x {layer.memory} memory, rank {layer.rank}")


register_kernel(PortableKernel("SVDF", "edgenn_svdf_s8", record_matcher((DType.INT8,), _svdf_layer),
                               _svdf_prepare))


# -- float32 SVDF --------------------------------------------------------------------------------
def _svdf_f32_prepare(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_svdf(node, graph)
    assert layer.integer is None and layer.wf_t is not None
    batch, n_input = graph.tensor(node.inputs[0]).shape
    arrays = [CArray("wf", "float", layer.wf_t.T), CArray("wt", "float", layer.wt),
              CArray("bias", "float", layer.bias_f)]
    state0 = const_operand(node, graph, 4, arrays)
    code = ("static const edgenn_svdf_f32_params @P@_params = {@P@_wf, @P@_wt, @P@_bias, "
            + args(batch, n_input, layer.filters, layer.memory, layer.rank)
            + f", {c_float(layer.act_min)}, {c_float(layer.act_max)}}};")
    scratch = _aligned16(4 * (batch * layer.filters * layer.memory + layer.filters))
    return KernelCall(
        call=c_call("edgenn_svdf_f32", PARAMS, IN0, OUT0, state0, _state_out(node), SCRATCH),
        sources=("edgenn_svdf.c",), arrays=tuple(arrays), code=code, scratch_bytes=scratch,
        state_in_place=True,
        comment=f"SVDF {layer.filters} filters x {layer.memory} memory, rank {layer.rank}")


register_kernel(PortableKernel("SVDF", "edgenn_svdf_f32",
                               record_matcher((DType.FLOAT32,), prepare_svdf), _svdf_f32_prepare,
                               (DType.FLOAT32,)))
