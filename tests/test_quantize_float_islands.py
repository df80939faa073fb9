"""The quantizer emits what the targets run: int8 / int16 Logistic and Tanh with TFLite's
fixed output parameters (a float wake-word-style classifier ending in Sigmoid quantizes and
runs on cortex-m4 bit-exactly with TFLite Micro), and every operator it keeps in float32 is
listed with its reason (``float_islands``, the CLI summary and its JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgenn.api import compile_model
from edgenn.cli.main import main
from edgenn.export import export_tflite
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.oracles.tflm import tflm_run
from edgenn.quantize import FloatIsland, float_islands, quantize, quantize_input


def _t(name: str, shape: tuple[int, ...]) -> Tensor:
    return Tensor(name, shape, DType.FLOAT32)


def _c(name: str, data: np.ndarray) -> Tensor:
    return Tensor.const(name, data.astype(np.float32))


def classifier(head: str, seed: int = 0) -> Graph:
    """A wake-word-style classifier: [1, 16, 24] features -> flatten -> FC(32, relu) -> FC(2)
    -> ``head`` (Sigmoid or Tanh)."""
    rng = np.random.default_rng(seed)
    tensors = [
        _t("x", (1, 16, 24)), _t("flat", (1, 384)),
        _c("w1", rng.normal(0, 0.1, (32, 384))), _c("b1", rng.normal(0, 0.1, 32)),
        _t("h", (1, 32)),
        _c("w2", rng.normal(0, 0.5, (2, 32))), _c("b2", rng.normal(0, 0.5, 2)),
        _t("logit", (1, 2)), _t("y", (1, 2)),
    ]
    nodes = [
        Node("flatten", "Reshape", ("x",), ("flat",), {"shape": (1, 384)}),
        Node("fc1", "FullyConnected", ("flat", "w1", "b1"), ("h",),
             {"activation": Activation.RELU}),
        Node("fc2", "FullyConnected", ("h", "w2", "b2"), ("logit",), {}),
        Node("head", head, ("logit",), ("y",), {}),
    ]
    return Graph(f"kws_{head.lower()}", {t.name: t for t in tensors}, nodes, ("x",),
                 ("y",)).validate()


def _data(n: int, seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).normal(0, scale, (n, 16, 24))).astype(np.float32)


FIXED = {("Sigmoid", "int8"): (1 / 256, -128), ("Tanh", "int8"): (1 / 128, 0),
         ("Sigmoid", "int16"): (1 / 32768, 0), ("Tanh", "int16"): (1 / 32768, 0)}


@pytest.mark.parametrize("activations", ["int8", "int16"])
@pytest.mark.parametrize("head", ["Sigmoid", "Tanh"])
def test_logistic_and_tanh_are_quantized_with_tflite_fixed_outputs(head: str,
                                                                   activations: str) -> None:
    g = classifier(head)
    q = quantize(g, _data(64, 1), activations=activations)
    assert [n.op for n in q.nodes] == [n.op for n in g.nodes]  # no float island
    assert float_islands(g, activations) == []
    y = q.tensor("y")
    assert y.dtype is DType(activations)
    assert y.quant == QuantParams.per_tensor(*FIXED[head, activations])
    # the quantized output follows the float model (int8 rounding through two layers)
    from edgenn.backends.ref import compile_ref
    from edgenn.quantize import dequantize_output

    x = _data(16, 2)
    (want,) = compile_ref(g).run(x)
    (got,) = compile_ref(q).run(quantize_input(q, x))
    assert np.abs(dequantize_output(q, got) - want).max() < 0.1


@pytest.mark.parametrize("head, activations", [("Sigmoid", "int8"), ("Tanh", "int8"),
                                               ("Sigmoid", "int16")])
def test_quantized_head_is_bit_exact_on_ref_cortex_m4_and_tflm(head: str,
                                                               activations: str) -> None:
    g = classifier(head)
    q = quantize(g, _data(64, 3), activations=activations)
    # why 3x the calibration spread: saturating inputs reach both ends of the lookup
    xq = quantize_input(q, _data(24, 4, scale=3.0))
    (tflm,) = tflm_run(export_tflite(q), xq)
    (ref,) = compile_model(q, "ref").run(xq)
    (m4,) = compile_model(q, "cortex-m4").run(xq)
    assert tflm.dtype == np.dtype(activations) and len(np.unique(tflm)) > 4
    assert int(np.count_nonzero(ref != tflm)) == 0
    assert int(np.count_nonzero(m4 != tflm)) == 0


# -- float islands -------------------------------------------------------------------------


def with_float_ops() -> Graph:
    """FC -> LRN (no integer kernel in TFLite Micro) -> Div by a constant (kept float on
    purpose) -> Sigmoid: two float islands, and the rest quantized."""
    rng = np.random.default_rng(5)
    tensors = [
        _t("x", (1, 2, 2, 4)),
        _c("w", rng.normal(0, 0.5, (4, 1, 1, 4))), _c("b", rng.normal(0, 0.1, 4)),
        _t("c", (1, 2, 2, 4)), _t("n", (1, 2, 2, 4)),
        _c("d", np.full((1, 1, 1, 4), 3.0)), _t("q", (1, 2, 2, 4)), _t("y", (1, 2, 2, 4)),
    ]
    nodes = [
        Node("conv", "Conv2D", ("x", "w", "b"), ("c",), {}),
        Node("lrn", "LRN", ("c",), ("n",), {"radius": 1, "bias": 1.0, "alpha": 0.1,
                                            "beta": 0.75}),
        Node("div", "Div", ("n", "d"), ("q",), {}),
        Node("sig", "Sigmoid", ("q",), ("y",), {}),
    ]
    return Graph("islands", {t.name: t for t in tensors}, nodes, ("x",), ("y",)).validate()


def test_float_islands_name_each_float_operator_and_why() -> None:
    g = with_float_ops()
    islands = float_islands(g)
    assert [(i.node, i.op) for i in islands] == [("lrn", "LRN"), ("div", "Div")]
    assert "no quantized TFLite Micro kernel" in islands[0].reason
    assert "DIV" in islands[1].reason
    q = quantize(g, np.random.default_rng(6).normal(0, 1, (32, 1, 2, 2, 4))[:, 0]
                 .astype(np.float32))
    float_nodes = [n.name for n in q.nodes if n.op not in ("Quantize", "Dequantize")
                   and q.tensor(n.outputs[0]).dtype is DType.FLOAT32]
    assert float_nodes == [i.node for i in islands]  # the list is what the graph runs
    assert q.tensor("y").quant == QuantParams.per_tensor(1 / 256, -128)


def test_int16_islands_follow_the_int16_kernels() -> None:
    """HardSwish has an int8 TFLM kernel only: quantized in int8, a float island in 16x8."""
    rng = np.random.default_rng(7)
    tensors = [_t("x", (1, 8)), _c("w", rng.normal(0, 0.5, (8, 8))), _t("h", (1, 8)),
               _t("y", (1, 8))]
    nodes = [Node("fc", "FullyConnected", ("x", "w", ""), ("h",), {}),
             Node("hs", "HardSwish", ("h",), ("y",), {})]
    g = Graph("hs", {t.name: t for t in tensors}, nodes, ("x",), ("y",)).validate()
    assert float_islands(g, "int8") == []
    assert float_islands(g, "int16") == [
        FloatIsland("hs", "HardSwish", "TFLite Micro has no int16 HardSwish kernel")]


def test_cli_summary_lists_float_islands(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    model, calib = tmp_path / "islands.tflite", tmp_path / "calib.npz"
    model.write_bytes(export_tflite(with_float_ops()))
    np.savez(calib, x=np.random.default_rng(8).normal(0, 1, (16, 2, 2, 4)).astype(np.float32))
    out, summary = tmp_path / "q.tflite", tmp_path / "summary.json"
    assert main(["quantize", str(model), "--calib", str(calib), "-o", str(out),
                 "--json", str(summary)]) == 0
    text = capsys.readouterr().out
    assert "kept in float32 (2 operators" in text
    data = json.loads(summary.read_text())
    assert [(f["op"]) for f in data["float_operators"]] == ["LRN", "Div"]
    assert all(f["node"] in text and f["reason"] for f in data["float_operators"])
    assert data["scheme"] == "int8" and data["calibration_samples"] == 16 and out.exists()


def test_cli_summary_says_when_nothing_is_float(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    model, calib = tmp_path / "kws.tflite", tmp_path / "calib.npz"
    model.write_bytes(export_tflite(classifier("Sigmoid")))
    np.savez(calib, x=_data(16, 9))
    assert main(["quantize", str(model), "--calib", str(calib), "-o",
                 str(tmp_path / "q.tflite"), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["float_operators"] == []


# -- Clip: quantized as TFLite's MAXIMUM / MINIMUM -------------------------------------------


def clipped(lo: float | None, hi: float | None) -> Graph:
    """FC -> Clip(lo, hi) -> FC: a clamp that is neither Relu nor Relu6."""
    rng = np.random.default_rng(10)
    tensors = [_t("x", (1, 12)), _c("w1", rng.normal(0, 0.6, (16, 12))), _t("h", (1, 16)),
               _t("c", (1, 16)), _c("w2", rng.normal(0, 0.4, (3, 16))),
               _c("b2", rng.normal(0, 0.1, 3)), _t("y", (1, 3))]
    bounds = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
    nodes = [Node("fc1", "FullyConnected", ("x", "w1", ""), ("h",), {}),
             Node("clip", "Clip", ("h",), ("c",), bounds),
             Node("fc2", "FullyConnected", ("c", "w2", "b2"), ("y",), {})]
    return Graph("clip", {t.name: t for t in tensors}, nodes, ("x",), ("y",)).validate()


@pytest.mark.parametrize("lo, hi, activations", [(-0.5, 1.25, "int8"), (-0.5, 1.25, "int16"),
                                                 (None, 0.75, "int8")])
def test_clip_is_quantized_and_bit_exact_with_tflm(lo: float | None, hi: float | None,
                                                    activations: str) -> None:
    g = clipped(lo, hi)
    assert float_islands(g, activations) == []
    calib = np.random.default_rng(11).normal(0, 1, (48, 12)).astype(np.float32)
    q = quantize(g, calib, activations=activations)
    assert [n.op for n in q.nodes] == ["FullyConnected", "Clip", "FullyConnected"]
    assert q.tensor("c").quant == q.tensor("h").quant  # a clamp of stored integers
    xq = quantize_input(q, np.random.default_rng(12).normal(0, 1.5, (32, 12)))
    tflm_model = export_tflite(q)
    (tflm,) = tflm_run(tflm_model, xq)
    from edgenn.backends.ref import compile_ref

    exe = compile_ref(q)
    (ref,) = exe.run(xq, keep=True)
    assert int(np.count_nonzero(ref != tflm)) == 0
    p = q.tensor("c").quant
    assert p is not None
    assert hi is not None
    clamped = exe.values["c"].astype(np.int64)
    assert np.count_nonzero(clamped == round(hi / p.s) + p.zp) > 0  # the upper bound bites
    if activations == "int8":  # one emulator build is enough for the clamp kernel
        (m4,) = compile_model(q, "cortex-m4").run(xq)
        assert int(np.count_nonzero(m4 != tflm)) == 0


# -- BatchNorm and HardSigmoid: rewritten as Mul / Add (/ Clip) before quantization ----------


def gated(seed: int = 13) -> Graph:
    """Conv -> HardSigmoid gate (PyTorch's alpha 1/6, beta 1/2) -> Mul -> flatten -> FC ->
    BatchNorm over the features (a BatchNorm1d the import cannot fold)."""
    rng = np.random.default_rng(seed)
    tensors = [
        _t("x", (1, 4, 4, 3)), _c("w", rng.normal(0, 0.5, (6, 3, 3, 3))),
        _c("b", rng.normal(0, 0.2, 6)), _t("c", (1, 4, 4, 6)), _t("g", (1, 4, 4, 6)),
        _t("m", (1, 4, 4, 6)), _t("f", (1, 96)), _c("w2", rng.normal(0, 0.2, (5, 96))),
        _t("h", (1, 5)), _c("gamma", rng.uniform(0.5, 2, 5)), _c("beta", rng.normal(0, 1, 5)),
        _c("mean", rng.normal(0, 0.5, 5)), _c("var", rng.uniform(0.2, 3, 5)), _t("y", (1, 5)),
    ]
    nodes = [
        Node("conv", "Conv2D", ("x", "w", "b"), ("c",), {"pads": (1, 1, 1, 1)}),
        Node("gate", "HardSigmoid", ("c",), ("g",), {"alpha": 1 / 6, "beta": 0.5}),
        Node("se", "Mul", ("c", "g"), ("m",), {}),
        Node("flat", "Reshape", ("m",), ("f",), {"shape": (1, 96)}),
        Node("fc", "FullyConnected", ("f", "w2", ""), ("h",), {}),
        Node("bn", "BatchNorm", ("h", "gamma", "beta", "mean", "var"), ("y",),
             {"epsilon": 1e-3}),
    ]
    return Graph("gated", {t.name: t for t in tensors}, nodes, ("x",), ("y",)).validate()


@pytest.mark.parametrize("activations", ["int8", "int16"])
def test_batch_norm_and_hard_sigmoid_are_quantized(activations: str) -> None:
    from edgenn.backends.ref import compile_ref
    from edgenn.quantize import dequantize_output

    g = gated()
    assert float_islands(g, activations) == []
    x = np.random.default_rng(14).normal(0, 1, (64, 4, 4, 3)).astype(np.float32)
    q = quantize(g, x, activations=activations)
    ops = [n.op for n in q.nodes]
    assert "HardSigmoid" not in ops and "BatchNorm" not in ops and "Dequantize" not in ops
    assert ops.count("Clip") == 1 and ops.count("Mul") == 3 and ops.count("Add") == 2
    xq = quantize_input(q, x[:24])
    (tflm,) = tflm_run(export_tflite(q), xq)
    (ref,) = compile_ref(q).run(xq)
    assert int(np.count_nonzero(ref != tflm)) == 0
    if activations == "int8":
        (m4,) = compile_model(q, "cortex-m4").run(xq)
        assert int(np.count_nonzero(m4 != tflm)) == 0
    # and it still computes the float model (the rewrite is exact in float32)
    (want,) = compile_ref(g).run(x[:24])
    span = float(want.max() - want.min())
    assert np.abs(dequantize_output(q, ref) - want).max() < 0.05 * span


def test_the_rewrite_computes_the_float_model() -> None:
    from edgenn.backends.ref import compile_ref
    from edgenn.quantize.lower import lower_for_quantization

    g = gated()
    lowered = lower_for_quantization(g)
    assert [n.op for n in lowered.nodes] == ["Conv2D", "Mul", "Add", "Clip", "Mul", "Reshape",
                                             "FullyConnected", "Mul", "Add"]
    plain = classifier("Sigmoid")
    assert lower_for_quantization(plain) is plain  # nothing to rewrite: the same graph
    x = np.random.default_rng(15).normal(0, 2, (16, 4, 4, 3)).astype(np.float32)
    (want,), (got,) = compile_ref(g).run(x), compile_ref(lowered).run(x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
