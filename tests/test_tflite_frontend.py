"""The TFLite importer on the TensorFlow-made fixtures and on hand-built flatbuffers.

Oracle: TFLite Micro's interpreter (its input/output details and its view of every constant
tensor), and TFLite's padding rule worked by hand.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_build import INT8, INT32, Op, T, add_options, build, lrn_options, softmax_options

from edgenn.errors import EdgennError, ModelFormatError, UnsupportedOperatorError
from edgenn.frontends import load
from edgenn.frontends.tflite import load_tflite
from edgenn.ir import Activation, DType
from edgenn.ir.padding import SAME, VALID, explicit_pads, pad_1d

FIXTURES = Path(__file__).parent / "fixtures" / "tflite"
NAMES = ["conv2_int8", "conv2_float", "dwsep_int8", "resnet_int8", "ops_float", "ops_int8"]
EXPECTED_OPS = {
    "conv2_int8": ["Conv2D", "Conv2D", "MaxPool2D", "Reshape", "FullyConnected"],
    "dwsep_int8": ["Conv2D", "Conv2D", "Conv2D", "Mean", "FullyConnected"],
    "resnet_int8": ["Conv2D"] + ["Conv2D", "Conv2D", "Add"] * 2 + ["Mean", "FullyConnected"],
}

import edgenn.oracles.tflm as tflm  # noqa: E402


def _bytes(name: str) -> bytes:
    return (FIXTURES / f"{name}.tflite").read_bytes()


def _tflm_tensor_indices(data: bytes) -> dict[str, int]:
    """Tensor name -> index, read with TFLM's own schema reader."""
    from tflite_micro import runtime

    sub = runtime.schema_fb.Model.GetRootAs(data, 0).Subgraphs(0)
    return {sub.Tensors(i).Name().decode(): i for i in range(sub.TensorsLength())}


@pytest.mark.parametrize("name", NAMES)
def test_fixture_loads_and_matches_tflm_io(name: str) -> None:
    data = _bytes(name)
    g = load(FIXTURES / f"{name}.tflite")  # through the format-sniffing dispatcher
    assert g.validate() is g
    assert dict(g.external_perm) == {}
    interp = tflm.tflm_interpreter(data)
    for i, (tname, details) in enumerate(
        [(n, interp.get_input_details(k)) for k, n in enumerate(g.inputs)]
        + [(n, interp.get_output_details(k)) for k, n in enumerate(g.outputs)]
    ):
        t = g.tensor(tname)
        assert t.shape == tuple(int(d) for d in details["shape"]), (i, tname)
        assert t.dtype.numpy == np.dtype(details["dtype"])
        q = details["quantization_parameters"]
        if t.dtype == DType.INT8:
            assert t.quant is not None and not t.quant.per_channel
            assert np.array_equal(t.quant.scale, q["scales"])
            assert np.array_equal(t.quant.zero_point, q["zero_points"])
        else:
            assert t.quant is None


@pytest.mark.parametrize("name", [n for n in NAMES if n in EXPECTED_OPS])
def test_fixture_operators(name: str) -> None:
    g = load_tflite(_bytes(name), name)
    assert [n.op for n in g.nodes] == EXPECTED_OPS[name]


@pytest.mark.parametrize("name", NAMES)
def test_constants_match_tflm(name: str) -> None:
    """Every weight/bias equals TFLM's tensor (depthwise transposed back to [1,KH,KW,Co])."""
    data = _bytes(name)
    g = load_tflite(data, name)
    index = _tflm_tensor_indices(data)
    interp = tflm.tflm_interpreter(data, preserve_all_tensors=True)
    det = interp.get_input_details(0)
    interp.set_input(np.zeros(tuple(det["shape"]), det["dtype"]), 0)
    interp.invoke()
    checked = 0
    for node in g.nodes:
        for tname in node.inputs[1:]:
            t = g.tensors.get(tname) if tname else None
            if t is None or not t.is_const or tname not in index:
                continue
            theirs = interp.GetTensor(index[tname], 0)["tensor_data"]
            ours = t.data
            is_dw = node.op == "Conv2D" and node.attr("groups") > 1 and tname == node.inputs[1]
            if is_dw:
                ours = ours.transpose(3, 1, 2, 0)
                assert t.quant is None or t.quant.axis in (None, 0)
            assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), tname
            checked += 1
    assert checked >= 2


def test_depthwise_quantization_axis_moves_to_zero() -> None:
    g = load_tflite(_bytes("dwsep_int8"), "dwsep")
    dw = [n for n in g.nodes if n.op == "Conv2D" and n.attr("groups") > 1]
    assert len(dw) == 1
    w = g.tensor(dw[0].inputs[1])
    assert w.shape == (8, 3, 3, 1) and dw[0].attr("groups") == 8
    assert w.quant is not None and w.quant.axis == 0 and w.quant.scale.size == 8
    b = g.tensor(dw[0].inputs[2])
    assert b.dtype == DType.INT32 and b.quant is not None and b.quant.axis == 0
    x = g.tensor(dw[0].inputs[0])
    assert x.quant is not None
    # TFLite's bias scale is input scale x weight scale, channel by channel
    np.testing.assert_allclose(b.quant.scale, x.quant.s * w.quant.scale, rtol=1e-6)


def test_ops_fixture_attributes() -> None:
    g = load_tflite(_bytes("ops_float"), "ops")
    by_op = {}
    for n in g.nodes:
        by_op.setdefault(n.op, []).append(n)
    conv = by_op["Conv2D"][0]
    assert conv.attr("activation") == Activation.RELU6 and conv.attr("pads") == (1, 1, 1, 1)
    dw = by_op["Conv2D"][1]
    assert dw.attr("groups") == 3 and g.tensor(dw.inputs[1]).shape == (6, 3, 3, 1)
    avg = by_op["AvgPool2D"][0]  # 8x8, k3 s2 SAME: total pad 1 -> goes bottom/right
    assert avg.attr("pads") == (0, 0, 1, 1) and avg.attr("count_include_pad") is False
    assert by_op["Pad"][0].attr("pads") == ((0, 0), (1, 1), (1, 1), (0, 0))
    assert by_op["Transpose"][0].attr("perm") == (0, 3, 1, 2)
    assert by_op["Mean"][0].attr("axes") == (1, 2)
    assert by_op["Softmax"][0].attr("beta") == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("padding", "size", "k", "stride", "dilation", "expected"),
    [
        (SAME, 28, 3, 2, 1, (0, 1)),  # odd total: the extra pixel goes after
        (SAME, 14, 3, 1, 1, (1, 1)),
        (SAME, 7, 4, 1, 1, (1, 2)),
        (SAME, 5, 2, 2, 1, (0, 1)),
        (SAME, 10, 3, 1, 2, (2, 2)),  # dilated: effective kernel 5
        (SAME, 8, 1, 3, 1, (0, 0)),
        (VALID, 28, 3, 1, 1, (0, 0)),
        (VALID, 28, 3, 2, 1, (0, 0)),
    ],
)
def test_tflite_padding(padding: int, size: int, k: int, stride: int, dilation: int,
                        expected: tuple[int, int]) -> None:
    assert pad_1d(padding, size, k, stride, dilation) == expected


def test_explicit_pads_order() -> None:
    assert explicit_pads(SAME, (28, 7), (3, 4), (2, 1)) == (0, 1, 1, 2)


# -- hand-built models ------------------------------------------------------------------------
def _q(scale: float, zp: int) -> dict[str, list]:
    return {"scale": [scale], "zero_point": [zp]}


def test_unsupported_operator_message() -> None:
    data = build([T("a", (1, 4)), T("b", (1, 4)), T("out", (1, 4))],
                 [Op(30, [0, 1], [2])], [0, 1], [2])  # SKIP_GRAM
    with pytest.raises(UnsupportedOperatorError) as err:
        load_tflite(data, "skip_gram.tflite")
    assert str(err.value) == ("skip_gram.tflite: node 'out': unsupported operator 'SKIP_GRAM' "
                              "on float32")


def test_empty_optional_tensor_is_not_corruption_the_operator_is_named() -> None:
    """A bidirectional LSTM with an omitted optional operand (shape [0], as TFLite writes it):
    the file is fine, the missing operator (and its type) is what the one-line error names."""
    data = build([T("x", (1, 3, 4)), T("peephole", (0,)), T("out", (1, 3, 4))],
                 [Op(52, [0, 1], [2])], [0], [2])  # BIDIRECTIONAL_SEQUENCE_LSTM
    with pytest.raises(UnsupportedOperatorError) as err:
        load_tflite(data, "lstm.tflite")
    assert str(err.value) == ("lstm.tflite: node 'out': unsupported operator "
                              "'BIDIRECTIONAL_SEQUENCE_LSTM' on float32")


def test_empty_operand_of_a_supported_operator_is_refused() -> None:
    data = build([T("a", (1, 4)), T("b", (0,)), T("out", (1, 4))], [Op(0, [0, 1], [2])],
                 [0, 1], [2])  # ADD
    with pytest.raises(ModelFormatError) as err:
        load_tflite(data, "add.tflite")
    assert str(err.value) == "add.tflite: node 'out': operand 'b' has the empty shape [0]"


def test_empty_graph_input_is_refused() -> None:
    data = build([T("a", (0, 4)), T("out", (0, 4))], [Op(22, [0], [1])], [0], [1])  # RESHAPE
    with pytest.raises(ModelFormatError, match="has the empty shape"):
        load_tflite(data, "empty.tflite")


def test_custom_operator_message() -> None:
    data = build([T("a", (1, 4)), T("out", (1, 4))], [Op(32, [0], [1], custom_code="Fancy")],
                 [0], [1])
    with pytest.raises(UnsupportedOperatorError, match="'CUSTOM:Fancy'"):
        load_tflite(data, "c.tflite")


def test_relu6_squeeze_padv2_and_int8_add() -> None:
    qa, qo = _q(0.05, -3), _q(0.1, 2)
    tensors = [
        T("x", (1, 1, 3, 2), INT8, **qa),
        T("r6", (1, 1, 3, 2), INT8, **qa),
        T("sq", (1, 3, 2), INT8, **qa),
        T("paddings", (3, 2), INT32, data=np.array([[0, 0], [1, 0], [0, 2]], np.int32)),
        T("padval", (1,), INT8, data=np.array([7], np.int8), **qa),
        T("p", (1, 4, 4), INT8, **qa),
        T("out", (1, 4, 4), INT8, **qo),
    ]
    ops = [Op(21, [0], [1]), Op(43, [1], [2]), Op(60, [2, 3, 4], [5]),
           Op(0, [5, 5], [6], add_options(1))]
    g = load_tflite(build(tensors, ops, [0], [6]), "m")
    assert [n.op for n in g.nodes] == ["Relu6", "Reshape", "Pad", "Add"]
    pad = g.nodes[2]
    assert pad.attr("pads") == ((0, 0), (1, 0), (0, 2))
    assert pad.attr("value") == pytest.approx(0.05 * (7 + 3))  # the real value of q=7
    assert g.nodes[3].attr("activation") == Activation.RELU
    assert g.tensor("out").quant.zp == 2


def test_quantize_lrn_dequantize() -> None:
    qa = _q(0.02, 5)
    tensors = [T("x", (1, 2, 2, 4), INT8, **qa), T("f", (1, 2, 2, 4)), T("n", (1, 2, 2, 4)),
               T("y", (1, 2, 2, 4), INT8, **_q(0.01, -1))]
    ops = [Op(6, [0], [1]), Op(13, [1], [2], lrn_options(2, 1.0, 1e-3, 0.75)), Op(114, [2], [3])]
    g = load_tflite(build(tensors, ops, [0], [3]), "m")
    assert [n.op for n in g.nodes] == ["Dequantize", "LRN", "Quantize"]
    lrn = g.nodes[1]
    assert lrn.attr("radius") == 2 and lrn.attr("alpha") == pytest.approx(1e-3)
    assert lrn.attr("beta") == pytest.approx(0.75) and lrn.attr("bias") == pytest.approx(1.0)
    assert g.tensor("f").dtype == DType.FLOAT32 and g.tensor("y").quant.s == pytest.approx(0.01)


def test_softmax_beta() -> None:
    data = build([T("x", (1, 5)), T("y", (1, 5))], [Op(25, [0], [1], softmax_options(0.5))],
                 [0], [1])
    assert load_tflite(data, "s").nodes[0].attr("beta") == pytest.approx(0.5)


def test_declared_shape_mismatch_is_a_format_error() -> None:
    data = build([T("x", (1, 5)), T("y", (1, 6))], [Op(25, [0], [1], softmax_options(1.0))],
                 [0], [1])
    with pytest.raises(ModelFormatError, match=r"^bad\.tflite: .*declared float32\[1, 6\]"):
        load_tflite(data, "bad.tflite")


def test_buffer_size_inconsistent_with_shape() -> None:
    tensors = [T("x", (1, 2, 2, 1)), T("paddings", (4, 2), INT32,
                                       data=np.zeros((3, 2), np.int32)), T("y", (1, 2, 2, 1))]
    data = build(tensors, [Op(34, [0, 1], [2])], [0], [2])
    with pytest.raises(ModelFormatError, match="'paddings'.*needs 32 bytes.*has 24"):
        load_tflite(data, "p.tflite")


def test_buffer_offset_outside_file() -> None:
    tensors = [T("x", (1, 2, 2, 1)), T("paddings", (4, 2), INT32,
                                       data=np.zeros((4, 2), np.int32)), T("y", (1, 2, 2, 1))]
    data = build(tensors, [Op(34, [0, 1], [2])], [0], [2], buffer_offsets={1: (10**6, 32)})
    with pytest.raises(ModelFormatError, match="outside the file"):
        load_tflite(data, "o.tflite")


def test_not_a_tflite_file() -> None:
    with pytest.raises(ModelFormatError, match="^x.bin: not a TFLite flatbuffer"):
        load_tflite(b"\x10\x00\x00\x00ONNXxxxxxxxxxxxxxxxxxx", "x.bin")
    with pytest.raises(EdgennError):
        load_tflite(b"", "empty")
