"""SkipNet training (edgenn.train) and the shipped skipnet_joint / skipnet_plain models.

The shipped-model tests need no torch: onnxruntime runs every configuration of the committed
files (a skipped block removed from the ONNX graph itself), an oracle independent of edgenn's
importer and apply_skip. Tests of the training code need torch (the ``train`` extra), so
they are marked slow and skipped where it is not installed.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from edgenn.data import mnist_split
from edgenn.errors import EdgennError, ModelFormatError
from edgenn.frontends.onnx import load_onnx
from edgenn.models import shipped_model_path
from edgenn.passes.skip import apply_skip, find_blocks
from edgenn.train.metadata import METADATA_KEY, drop_blocks, read_skippable_blocks

HAVE_TORCH = importlib.util.find_spec("torch") is not None
SKIP_B2 = frozenset({"block2"})


def _proto(name: str) -> onnx.ModelProto:
    return onnx.load(str(shipped_model_path(name)))


def _ort_logits(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """onnxruntime logits [N, 10], one image at a time (the file's batch is 1)."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.concatenate([sess.run(None, {"input": img[None]})[0] for img in x])


@pytest.fixture(scope="module")
def test_digits() -> tuple[np.ndarray, np.ndarray]:
    x, y = mnist_split("test")
    return x.astype(np.float32)[:, None] / np.float32(255.0), y


@pytest.mark.skipif(HAVE_TORCH, reason="checks the message shown when torch is missing")
def test_training_without_torch_gives_the_install_hint() -> None:
    import edgenn.train

    with pytest.raises(EdgennError, match=r"pip install torch==2\.13\.0"):
        edgenn.train.require_torch()
    with pytest.raises(EdgennError, match="PyTorch is needed for training"):
        from edgenn.train import SkipNet  # noqa: F401


@pytest.mark.parametrize("name", ["skipnet_joint", "skipnet_plain"])
def test_shipped_skipnet_file_graph_and_blocks(name: str) -> None:
    model = _proto(name)
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == 13
    records = read_skippable_blocks(model)
    assert [(b.name, b.prefix) for b in records] == [("block1", "/block1/"),
                                                     ("block2", "/block2/")]
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("BatchNormalization") == 6  # kept: the import folds them

    graph = load_onnx(model.SerializeToString(), name=name)
    assert [n.op for n in graph.nodes] == ["Conv2D"] * 4 + ["Add"] + ["Conv2D"] * 2 + [
        "Add", "Mean", "FullyConnected"]
    ops_by_name = {n.name: n.op for n in graph.nodes}
    blocks = find_blocks(graph)
    assert [b.name for b in blocks] == ["block1", "block2"]
    for block, record in zip(blocks, records, strict=True):
        # the importer keeps ONNX node names; BN and ReLU were folded into the convs
        assert all(n.startswith(record.prefix) for n in block.nodes)
        assert [ops_by_name[n] for n in block.nodes] == ["Conv2D", "Conv2D", "Add"]


def test_joint_model_accuracy_full_and_skip_onnxruntime(test_digits) -> None:
    x, y = test_digits
    model = _proto("skipnet_joint")
    full = np.mean(_ort_logits(model, x).argmax(1) == y)
    skip = np.mean(_ort_logits(drop_blocks(model, ["block2"]), x).argmax(1) == y)
    # measured when the model was trained (edgenn/models/README.md); slack: other ORT builds
    assert full == pytest.approx(0.9905, abs=0.001)
    assert skip == pytest.approx(0.9880, abs=0.001)
    assert full - skip <= 0.003, (full, skip)  # the target: within 0.3 pt


def test_plain_model_loses_accuracy_when_block2_is_skipped(test_digits) -> None:
    x, y = test_digits
    model = _proto("skipnet_plain")
    full = np.mean(_ort_logits(model, x).argmax(1) == y)
    skip = np.mean(_ort_logits(drop_blocks(model, ["block2"]), x).argmax(1) == y)
    assert full == pytest.approx(0.9890, abs=0.001)
    assert full - skip >= 0.01, (full, skip)  # never trained without block2


def test_joint_model_int8_full_and_skip() -> None:
    from edgenn.backends.ref import compile_ref
    from edgenn.evaluate import images_to_input, predict
    from edgenn.quantize import quantize

    graph = load_onnx(_proto("skipnet_joint").SerializeToString(), name="skipnet_joint")
    train, _ = mnist_split("train")
    q = quantize(graph, images_to_input(graph, train[:500]), skippable_blocks=True)
    x, y = mnist_split("test")
    xq = images_to_input(q, x)
    acc = {}
    for config in (frozenset(), SKIP_B2):
        skipped = apply_skip(q, config)
        if config:  # block2's output shares x's int8 parameters: skipping it is an alias
            assert [n.op for n in skipped.nodes][-4:] == ["Add", "Reshape", "Mean",
                                                          "FullyConnected"]
        exe = compile_ref(skipped)
        acc[config] = float(np.mean(predict(lambda b, e=exe: e.run(b)[0], xq) == y))
    assert acc[frozenset()] == pytest.approx(0.9900, abs=0.0005)
    assert acc[SKIP_B2] == pytest.approx(0.9875, abs=0.0005)
    assert acc[frozenset()] - acc[SKIP_B2] <= 0.003


def test_edgenn_skip_path_matches_onnxruntime_without_the_block(test_digits) -> None:
    from edgenn.backends.ref import compile_ref

    x = test_digits[0][:64]
    model = _proto("skipnet_joint")
    graph = load_onnx(model.SerializeToString(), name="skipnet_joint")
    for config in (frozenset(), frozenset({"block1"}), SKIP_B2, frozenset({"block1", "block2"})):
        ours = compile_ref(apply_skip(graph, config)).run(x)[0]
        ref = _ort_logits(drop_blocks(model, sorted(config)), x)
        np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4, err_msg=str(config))


def test_drop_blocks_errors() -> None:
    model = _proto("skipnet_joint")
    with pytest.raises(ModelFormatError, match=r"no skippable block 'block3'.*block1, block2"):
        drop_blocks(model, ["block3"])
    bad = onnx.ModelProto()
    bad.CopyFrom(model)
    onnx.helper.set_model_props(bad, {METADATA_KEY: json.dumps({"name": 1})})
    with pytest.raises(ModelFormatError, match="not a list"):
        read_skippable_blocks(bad)


# ---- training code: needs torch ------------------------------------------------------------


def _torch():  # type: ignore[no-untyped-def]
    return pytest.importorskip("torch", reason="the train extra: pip install torch==2.13.0")


@pytest.mark.slow
def test_forward_configs_equal_separate_forwards() -> None:
    torch = _torch()
    from edgenn.train.skipnet import SkipNet

    torch.manual_seed(1)
    model = SkipNet(width=8, hidden=(8, 16, 12), stem=(4,), zero_init_residual=False).eval()
    x = torch.rand(3, 1, 28, 28)
    configs = [frozenset(), frozenset({"block3"}), frozenset({"block1", "block3"}),
               frozenset({"block2"})]
    with torch.no_grad():
        joint = model.forward_configs(x, configs)
        for config, logits in zip(configs, joint, strict=True):
            torch.testing.assert_close(logits, model(x, config))
        # skipping is the identity: block1 then the head, by hand
        by_hand = model.head(model.block2(model.stem(x)))
        torch.testing.assert_close(model(x, frozenset({"block1", "block3"})), by_hand)
    with pytest.raises(EdgennError, match="unknown block.*block4.*known: block1, block2, block3"):
        model.forward_configs(x, [frozenset({"block4"})])


@pytest.mark.slow
def test_joint_loss_is_the_mean_of_cross_entropies() -> None:
    torch = _torch()
    from edgenn.train.losses import joint_loss

    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, 10, generator=gen), torch.randn(5, 10, generator=gen)
    y = torch.tensor([0, 3, 9, 1, 1])
    ce = torch.nn.functional.cross_entropy
    torch.testing.assert_close(joint_loss([a, b], y), (ce(a, y) + ce(b, y)) / 2)
    torch.testing.assert_close(joint_loss([a], y), ce(a, y))
    torch.testing.assert_close(joint_loss([a, b], y, [3.0, 1.0]), (3 * ce(a, y) + ce(b, y)) / 4)
    with pytest.raises(EdgennError, match="no configurations"):
        joint_loss([], y)


@pytest.mark.slow
def test_export_matches_torch_in_every_configuration(tmp_path) -> None:
    torch = _torch()
    from edgenn.train.export import export_onnx
    from edgenn.train.skipnet import SkipNet

    torch.manual_seed(2)
    model = SkipNet(width=8, hidden=(8, 16), stem=(4,), zero_init_residual=False)
    model.train()
    with torch.no_grad():  # non-trivial BN running statistics
        model(torch.rand(16, 1, 28, 28))
    proto = export_onnx(model, tmp_path / "s.onnx")
    assert onnx.load(str(tmp_path / "s.onnx")) == proto
    x = torch.rand(4, 1, 28, 28)
    graph = load_onnx(proto.SerializeToString(), name="s")
    assert [b.name for b in find_blocks(graph)] == model.block_names
    from edgenn.backends.ref import compile_ref

    for config in (frozenset(), frozenset({"block1"}), SKIP_B2):
        with torch.no_grad():
            want = model.eval()(x, config).numpy()
        np.testing.assert_allclose(_ort_logits(drop_blocks(proto, sorted(config)), x.numpy()),
                                   want, rtol=1e-4, atol=1e-4)
        got = compile_ref(apply_skip(graph, config)).run(x.numpy())[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_short_training_learns_and_is_deterministic() -> None:
    torch = _torch()
    from edgenn.train.skipnet import SkipNet
    from edgenn.train.trainer import (
        TrainOptions,
        accuracy,
        images_to_tensor,
        seed_everything,
        train_skipnet,
    )

    images, labels = mnist_split("train")
    x, y = images_to_tensor(images[:1500]), torch.from_numpy(labels[:1500].astype(np.int64))
    opts = TrainOptions(epochs=2, seed=3, progress=False)
    weights = []
    for _ in range(2):
        seed_everything(3)
        model = SkipNet(width=16, hidden=(16, 32))
        result = train_skipnet(model, x, y, opts)
        assert result.configs == [frozenset(), SKIP_B2]
        assert result.epoch_losses[1] < result.epoch_losses[0] < 2.3
        weights.append(torch.cat([p.detach().flatten() for p in model.state_dict().values()
                                  if p.is_floating_point()]))
    torch.testing.assert_close(weights[0], weights[1], rtol=0, atol=0)
    tx, ty = mnist_split("test")
    xt = images_to_tensor(tx[:500])
    assert accuracy(model, xt, ty[:500]) > 0.6
    assert accuracy(model, xt, ty[:500], SKIP_B2) > 0.6
    with pytest.raises(EdgennError, match="epochs 0"):
        train_skipnet(model, x, y, TrainOptions(epochs=0))


def test_joint_model_int8_tflite_is_bit_exact_with_tflite_micro() -> None:
    pytest.importorskip("tflite_micro", reason="the oracle: pip install tflite-micro")
    from edgenn.backends.ref import compile_ref
    from edgenn.evaluate import images_to_input
    from edgenn.export import export_tflite
    from edgenn.oracles.tflm import tflm_run
    from edgenn.quantize import quantize

    graph = load_onnx(_proto("skipnet_joint").SerializeToString(), name="skipnet_joint")
    train, _ = mnist_split("train")
    q = quantize(graph, images_to_input(graph, train[:500]), skippable_blocks=True)
    xq = images_to_input(q, mnist_split("test")[0][:20])
    ours = compile_ref(q).run(xq)[0]
    model = export_tflite(q)
    theirs = np.concatenate([tflm_run(model, xq[i:i + 1])[0] for i in range(len(xq))])
    np.testing.assert_array_equal(ours.reshape(theirs.shape), theirs)
