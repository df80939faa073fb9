"""The SVM layer of the IR and the reference runtime: build / run / train, the training buffer,
continued training, the head builder, and CNN features against scikit-learn (LIBSVM).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC
from svm_reference import compare_with_libsvm

from edgenn.api import compile_model, load_model, quantize_model
from edgenn.backends.ref.kernels.svm import SVM
from edgenn.data import mnist_split
from edgenn.errors import GraphValidationError, ShapeError, UnsupportedOperatorError
from edgenn.evaluate import images_to_input
from edgenn.ir import DType, Graph, Node, QuantParams, Tensor
from edgenn.models import shipped_model_path
from edgenn.svm import (
    BufferFullError,
    SMOClassifier,
    SvmDataError,
    SvmParameterError,
    TrainingBuffer,
    attach_svm_head,
    penultimate_features,
    trained_graph,
)
from edgenn.svm.ovo import class_pairs, ovr_decision, pair_decisions

CLASSES = (0, 1, 2)


def svm_graph(d: int, classes: tuple = CLASSES, capacity: int = 60, dtype: DType = DType.FLOAT32,
              **attrs: object) -> Graph:
    """x[1, d] -> SVM, with zero initial weights."""
    k = len(classes)
    p = k * (k - 1) // 2
    quant = QuantParams.per_tensor(0.05, -10) if dtype is DType.INT8 else None
    tensors = {
        "x": Tensor("x", (1, d), dtype, quant),
        "w": Tensor.const("w", np.zeros((p, d), np.float32)),
        "b": Tensor.const("b", np.zeros(p, np.float32)),
        "scores": Tensor("scores", (1, k), DType.FLOAT32),
    }
    node_attrs = {"classes": classes, "buffer_capacity": capacity, "C": 1.0, "tol": 1e-3,
                  "max_iter": 100_000, "carry": "none", "carry_limit": None, **attrs}
    node = Node("svm", "SVM", ("x", "w", "b"), ("scores",), node_attrs)
    return Graph("svm_only", tensors, (node,), ("x",), ("scores",)).validate()


def blobs(n: int, d: int = 5, k: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    centers = rng.normal(scale=3.0, size=(k, d))
    return (centers[y] + rng.normal(size=(n, d))).astype(np.float32), y


def svm_layer(exe: object) -> SVM:
    layer = exe.layers[-1]  # type: ignore[attr-defined]
    assert isinstance(layer, SVM)
    return layer


# -- IR ---------------------------------------------------------------------------------------
def test_shape_inference_and_validation() -> None:
    g = svm_graph(4)
    assert g.tensor("scores").dtype is DType.FLOAT32
    bad_w = dict(g.tensors, w=Tensor.const("w", np.zeros((2, 4), np.float32)))
    with pytest.raises(GraphValidationError, match=r"need weights \[3, 4\] and bias \[3\]"):
        g.replace(tensors=bad_w).validate()
    one_class = g.with_nodes([g.nodes[0].with_attrs(classes=(7,))])
    with pytest.raises(GraphValidationError, match="needs at least 2 classes, got 1"):
        one_class.validate()
    with pytest.raises(GraphValidationError, match="buffer_capacity"):
        g.with_nodes([g.nodes[0].with_attrs(buffer_capacity=1)]).validate()


# -- run and train ----------------------------------------------------------------------------
def test_one_full_buffer_equals_smo_classifier() -> None:
    x, y = blobs(60)
    exe = compile_model(svm_graph(5, capacity=60))
    assert np.all(exe.run(x)[0] == 0)  # untrained pairs abstain: no votes, no confidence
    reports = exe.train(x, labels=y)["svm"]
    assert len(reports) == 1 and reports[0].samples == 60 and reports[0].trained.all()
    layer = svm_layer(exe)
    clf = SMOClassifier(C=1.0, solver="numpy").fit(x, y)
    np.testing.assert_allclose(layer.weight, clf.coef_.astype(np.float32), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(layer.bias, clf.intercept_.astype(np.float32), rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(reports[0].objective, clf.objective_)
    xt, _ = blobs(200, seed=1)
    scores = exe.run(xt)[0]
    assert scores.dtype == np.float32 and scores.shape == (200, 3)
    np.testing.assert_allclose(scores, clf.decision_function(xt), atol=1e-4)
    assert layer.buffer.count == 0  # carry "none": cleared


def test_train_splits_a_long_stream_into_buffer_fills() -> None:
    x, y = blobs(130)
    exe = compile_model(svm_graph(5, capacity=50))
    reports = exe.train(x, labels=y)["svm"]
    assert [r.samples for r in reports] == [50, 50]
    assert svm_layer(exe).buffer.count == 30
    report = svm_layer(exe).fit_buffer()  # flush the partial buffer explicitly
    assert report.samples == 30 and svm_layer(exe).buffer.count == 0


def test_int8_features_are_dequantized() -> None:
    xq = np.random.default_rng(2).integers(-128, 128, size=(60, 5)).astype(np.int8)
    y = (xq[:, 0] > 0).astype(int) + (xq[:, 1] > 40).astype(int)
    exe8 = compile_model(svm_graph(5, dtype=DType.INT8))
    exe8.train(xq, labels=y)
    xf = (0.05 * (xq.astype(np.float32) + 10)).astype(np.float32)
    exef = compile_model(svm_graph(5))
    exef.train(xf, labels=y)
    np.testing.assert_array_equal(svm_layer(exe8).weight, svm_layer(exef).weight)
    np.testing.assert_array_equal(exe8.run(xq)[0], exef.run(xf)[0])


def test_buffer_full_nan_and_label_errors() -> None:
    exe = compile_model(svm_graph(5, capacity=10))
    layer = svm_layer(exe)
    x, y = blobs(12)
    layer.append(x[:8], y[:8])
    with pytest.raises(BufferFullError,
                       match=r"buffer is full \(8 of 10 samples\): train it before appending 4"):
        layer.append(x[8:], y[8:])
    bad = x[:2].copy()
    bad[1, 3] = np.nan
    with pytest.raises(SvmDataError, match=r"feature \[1, 3\] is nan"):
        layer.append(bad, y[:2])
    with pytest.raises(SvmDataError, match=r"label 9 is not one of its classes \[0, 1, 2\]"):
        exe.train(x[:2], labels=[0, 9])
    with pytest.raises(ShapeError, match="2 samples of 'x' but 3 labels"):
        exe.train(x[:2], labels=[0, 1, 2])
    layer.buffer.clear()
    with pytest.raises(SvmDataError, match="training buffer is empty"):
        layer.fit_buffer()


def test_pairs_missing_a_class_keep_their_weights_and_abstain() -> None:
    x, y = blobs(40)
    only01 = y < 2
    exe = compile_model(svm_graph(5, capacity=int(only01.sum())))
    report = exe.train(x[only01], labels=y[only01])["svm"][0]
    np.testing.assert_array_equal(report.trained, [True, False, False])
    assert np.isnan(report.objective[1:]).all()
    layer = svm_layer(exe)
    np.testing.assert_array_equal(layer.active_pairs, [True, False, False])
    scores = exe.run(x)[0]
    assert (scores[:, 2] == 0).all()  # class 2 takes part in no trained pair
    pred = scores.argmax(axis=1)
    assert np.mean(pred[only01] == y[only01]) > 0.9


def test_a_layer_that_does_not_learn_and_a_graph_without_one() -> None:
    g = svm_graph(5)
    relu = Graph("relu", {"x": g.tensor("x"), "y": Tensor("y", (1, 5), DType.FLOAT32)},
                 (Node("r", "Relu", ("x",), ("y",)),), ("x",), ("y",))
    exe = compile_model(relu)
    with pytest.raises(UnsupportedOperatorError, match="has no layer that trains"):
        exe.train(np.zeros((1, 5), np.float32), labels=[0])
    with pytest.raises(UnsupportedOperatorError, match="does not learn on the device"):
        exe.layers[0].train(np.zeros((1, 5), np.float32), labels=np.zeros(1))


# -- continued training ---------------------------------------------------------------------
def test_carry_support_vectors_keeps_them_at_the_front() -> None:
    x, y = blobs(200, seed=3)
    buf = TrainingBuffer(5, 3, capacity=50, carry="support_vectors", carry_limit=40)
    w, b = np.zeros((3, 5), np.float32), np.zeros(3, np.float32)
    buf.append(x[:50], y[:50])
    first = buf.x[:50].copy()
    report = buf.train(w, b)
    assert 0 < report.carried_out == buf.count == buf.carried <= 40
    kept = buf.x[: buf.count]
    assert all(any(np.array_equal(row, f) for f in first) for row in kept)
    assert (buf.alpha[: buf.count] > 0).any(axis=1).all()  # every carried sample is an SV
    assert (buf.alpha[buf.count:] == 0).all()
    buf.append(x[50:50 + buf.room], y[50:50 + buf.room])
    assert buf.train(w, b).carried_in == report.carried_out


def test_carry_limit_takes_classes_in_turn_margin_vectors_first() -> None:
    buf = TrainingBuffer(1, 3, capacity=10, C=1.0, carry="support_vectors", carry_limit=4)
    buf.count = 8
    buf.x[:8, 0] = np.arange(8)
    buf.labels[:8] = [0, 0, 0, 0, 1, 1, 2, 2]
    # alphas (LIBSVM layout, 2 columns); 1.0 = bounded at C, in (0, C) = free, 0 = not an SV
    buf.alpha[:8] = [[1.0, 0], [0.5, 0], [1.0, 0], [0.2, 0],
                     [1.0, 0], [0, 0], [0, 1.0], [0, 1.0]]
    buf._carry_over(np.array([True, True, True]))
    # class 0: free 3, free 1 (newest first), then bounded; class 1: row 4; class 2: row 7, 6
    # turns: 3 (c0), 4 (c1), 7 (c2), 1 (c0) -> kept in buffer order
    np.testing.assert_array_equal(buf.x[:4, 0], [1, 3, 4, 7])
    assert buf.count == buf.carried == 4


def test_samples_of_untrained_classes_wait_for_the_next_batch() -> None:
    x, y = blobs(120, seed=5)
    buf = TrainingBuffer(5, 3, capacity=20, carry="support_vectors")
    w, b = np.zeros((3, 5), np.float32), np.zeros(3, np.float32)
    zeros, ones = x[y == 0], x[y == 1]
    buf.append(zeros[:20], np.zeros(20, np.int64))
    report = buf.train(w, b)  # one class: nothing trains, the newest 10 samples wait
    assert not report.trained.any() and report.carried_out == 10
    np.testing.assert_array_equal(buf.x[:10], zeros[10:20])
    buf.append(ones[:10], np.ones(10, np.int64))
    assert buf.train(w, b).trained.tolist() == [True, False, False]
    none = TrainingBuffer(5, 3, capacity=20, carry="none")
    none.append(zeros[:20], np.zeros(20, np.int64))
    assert none.train(w, b).carried_out == 0


def test_class_by_class_stream_is_learned_with_support_vectors() -> None:
    x, y = blobs(600, d=6, k=4, seed=6)
    order = np.argsort(y, kind="stable")  # all of class 0, then class 1, ...
    scores = {}
    for carry in ("support_vectors", "none"):
        buf = TrainingBuffer(6, 4, capacity=40, carry=carry)
        w, b = np.zeros((6, 6), np.float32), np.zeros(6, np.float32)
        pos = 0
        while pos + buf.room <= len(order):
            take = order[pos:pos + buf.room]
            pos += len(take)
            buf.append(x[take], y[take])
            buf.train(w, b)
        dec = pair_decisions(x, w, b)
        active = w.any(axis=1) | (b != 0)
        scores[carry] = np.mean(ovr_decision(dec, 4, active).argmax(axis=1) == y)
    # "none" only learns the pairs of neighbouring classes that share a batch
    assert scores["support_vectors"] > 0.95 and scores["none"] < scores["support_vectors"] - 0.2


def test_warm_start_reaches_the_same_solution_in_fewer_iterations() -> None:
    x, y = blobs(400, d=8, k=4, seed=4)
    results = {}
    for carry in ("support_vectors", "warm_start"):
        buf = TrainingBuffer(8, 4, capacity=100, C=1.0, carry=carry)
        w, b = np.zeros((6, 8), np.float32), np.zeros(6, np.float32)
        reports, pos = [], 0
        while pos + buf.room <= len(x):
            n = buf.room
            buf.append(x[pos:pos + n], y[pos:pos + n])
            pos += n
            reports.append(buf.train(w, b))
        results[carry] = (reports, w.copy())
    cold, warm = results["support_vectors"][0], results["warm_start"][0]
    assert len(cold) == len(warm) >= 4
    for c, wr in zip(cold[1:], warm[1:], strict=True):
        np.testing.assert_allclose(wr.objective, c.objective, rtol=2e-3)
    assert sum(r.iterations.sum() for r in warm[1:]) < sum(r.iterations.sum() for r in cold[1:])


def test_buffer_parameter_errors() -> None:
    with pytest.raises(SvmParameterError, match="carry must be one of"):
        TrainingBuffer(3, 2, 10, carry="all")
    with pytest.raises(SvmParameterError, match=r"carry_limit must be an integer in \[0, 9\]"):
        TrainingBuffer(3, 2, 10, carry_limit=10)
    with pytest.raises(SvmParameterError, match="capacity"):
        TrainingBuffer(3, 2, 1)
    with pytest.raises(SvmParameterError, match="C must be a positive"):
        TrainingBuffer(3, 2, 10, C=0)


# -- the head on the MNIST CNN --------------------------------------------------------------
@pytest.fixture(scope="module")
def cnn() -> dict[str, object]:
    """The int8 MNIST CNN, 1,500 shuffled training digits and 1,000 test digits with their
    int8 penultimate features (the SVM layer's input), computed once."""
    graph = load_model(shipped_model_path("mnist_cnn"))
    train, train_labels = mnist_split("train")
    test, test_labels = mnist_split("test")
    idx = np.random.default_rng(0).permutation(len(train))[:1500]
    q = quantize_model(graph, images_to_input(graph, train[idx[:200]]))
    data: dict[str, object] = {"float": graph, "int8": q, "x": images_to_input(q, train[idx]),
                               "y": train_labels[idx], "xt": images_to_input(q, test[:1000]),
                               "yt": test_labels[:1000]}
    feat = penultimate_features(q)
    exe = compile_model(attach_svm_head(q, feat, classes=range(10), capacity=10))
    for key in ("x", "xt"):
        exe.run(data[key], keep=True)
        data[f"f{key}"] = exe.values[feat]  # int8 [N, 64]
    return data


def test_head_cuts_at_the_penultimate_features(cnn: dict) -> None:
    q = cnn["int8"]
    feat = penultimate_features(q)
    assert feat == "/9/Relu_output_0"
    head = attach_svm_head(q, feat, classes=range(10), capacity=100)
    assert [n.op for n in head.nodes][-2:] == ["FullyConnected", "SVM"]
    assert head.outputs == ("svm/scores",) and "logits" not in head.tensors
    node = head.nodes[-1]
    assert node.attrs["classes"] == tuple(range(10)) and node.attrs["buffer_capacity"] == 100
    with pytest.raises(GraphValidationError, match="already has a node or tensor 'svm'"):
        attach_svm_head(head, feat, classes=range(10), capacity=10)
    pooled = attach_svm_head(q, "/6/MaxPool_output_0", classes=(3, 5), capacity=10)
    assert pooled.nodes[-2].op == "Reshape" and pooled.tensor("svm/features").shape == (1, 1568)
    assert compile_model(pooled).run(cnn["x"][:4])[0].shape == (4, 2)
    assert compile_model(head).run(cnn["x"][:4])[0].shape == (4, 10)


def test_cnn_features_match_libsvm(cnn: dict) -> None:
    head = attach_svm_head(cnn["int8"], penultimate_features(cnn["int8"]), classes=range(10),
                           capacity=1500, C=0.1, carry="none")
    layer = svm_layer(compile_model(head))
    report = layer.train(cnn["fx"], labels=cnn["y"])[0]  # the layer alone: no CNN re-run
    feats = layer.features(cnn["fx"]).astype(np.float64)
    feats_t = layer.features(cnn["fxt"]).astype(np.float64)
    ours = SMOClassifier(C=0.1, solver="numpy").fit(feats, cnn["y"])
    ref = SVC(kernel="linear", C=0.1).fit(feats, cnn["y"])
    cmp = compare_with_libsvm(ours, ref, feats, cnn["y"], feats_t, cnn["yt"])
    assert cmp.accuracy_gap_pt <= 0.5 and cmp.objective_rel.max() <= 1e-3
    assert cmp.n_sv_rel <= 0.05 and cmp.accuracy > 0.95
    np.testing.assert_allclose(report.objective, ours.objective_)
    scores = layer.run(cnn["fxt"])[0]
    assert np.mean(scores.argmax(axis=1) == ours.predict(feats_t)) >= 0.998  # ovr vs vote ties


def test_init_from_a_classifier_and_trained_graph(cnn: dict) -> None:
    q = cnn["int8"]
    feat = penultimate_features(q)
    y = cnn["y"][:600]
    mask = y < 3
    probe = svm_layer(compile_model(attach_svm_head(q, feat, classes=range(10), capacity=10)))
    feats = probe.features(cnn["fx"][:600])
    clf = SMOClassifier(C=0.1, solver="numpy").fit(feats[mask], y[mask])
    # classes in another order and a superset: pairs are mapped, flipped where needed
    head = attach_svm_head(q, feat, classes=(4, 2, 1, 0, 3), capacity=50, init=clf)
    exe = compile_model(head)
    layer = svm_layer(exe)
    pairs = class_pairs(5)
    assert layer.active_pairs.sum() == 3  # (2, 1), (2, 0), (1, 0) only
    p = pairs.index((1, 3))  # classes 2 and 0: clf's pair (0, 2) flipped
    np.testing.assert_allclose(layer.weight[p], -clf.coef_[1], rtol=1e-6)
    pred = np.array((4, 2, 1, 0, 3))[layer.run(cnn["fx"][:600][mask])[0].argmax(axis=1)]
    np.testing.assert_array_equal(pred, clf.predict(feats[mask]))
    more = 600 + np.flatnonzero(cnn["y"][600:] < 5)[:50]
    exe.train(cnn["x"][more], labels=cnn["y"][more])  # the whole graph: CNN, then the head
    assert layer.active_pairs.all()
    rebuilt = compile_model(trained_graph(exe))
    np.testing.assert_array_equal(svm_layer(rebuilt).weight, layer.weight)
    np.testing.assert_array_equal(rebuilt.run(cnn["xt"][:50])[0], exe.run(cnn["xt"][:50])[0])
    with pytest.raises(SvmParameterError, match=r"init knows classes \[0, 1, 2\]"):
        attach_svm_head(q, feat, classes=(5, 6), capacity=10, init=clf)


def test_float_graph_head_keeps_the_onnx_input_layout(cnn: dict) -> None:
    g = cnn["float"]
    head = attach_svm_head(g, penultimate_features(g), classes=range(10), capacity=20)
    assert head.external_perm == {"input": (0, 3, 1, 2)}
    train, labels = mnist_split("train")
    x = images_to_input(g, train[::400])  # NCHW, as the ONNX file declares
    exe = compile_model(head)
    assert exe.train(x, labels=labels[::400])["svm"][0].samples == 20
    assert exe.run(x)[0].shape == (20, 10)


def test_pair_decisions_helper() -> None:
    w, b = np.array([[1.0, 0.0]]), np.array([0.5])
    np.testing.assert_allclose(pair_decisions(np.array([[2.0, 3.0]]), w, b), [[2.5]])


def test_init_from_a_binary_svc_keeps_scikit_learns_sign() -> None:
    x, y = blobs(80, k=2, seed=8)
    relu = Graph("relu", {"x": Tensor("x", (1, 5), DType.FLOAT32),
                          "f": Tensor("f", (1, 5), DType.FLOAT32)},
                 (Node("r", "Relu", ("x",), ("f",)),), ("x",), ("f",))
    feats = np.maximum(x, 0)
    ref = SVC(kernel="linear", C=1.0).fit(feats, y)  # binary: positive means classes_[1]
    layer = svm_layer(compile_model(attach_svm_head(relu, "f", classes=(0, 1, 2), capacity=4,
                                                    init=ref)))
    np.testing.assert_allclose(layer.weight[0], -ref.coef_[0], rtol=1e-6)
    np.testing.assert_array_equal(layer.active_pairs, [True, False, False])
    pred = layer.run(feats)[0].argmax(axis=1)
    np.testing.assert_array_equal(pred, ref.predict(feats))
