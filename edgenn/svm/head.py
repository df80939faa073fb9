"""Put an SVM layer on top of a network: a frozen (int8) feature extractor -> SVM head.

    graph = quantize_model(load_model("mnist_cnn.onnx"), calibration)
    head = attach_svm_head(graph, penultimate_features(graph), classes=range(10), capacity=100)
    exe = compile_model(head)              # the reference runtime
    exe.train(x_batch, labels=y_batch)     # appends; trains each time the buffer fills
    scores = exe.run(x_test)[0]            # [N, 10]; argmax = predicted class
    trained = trained_graph(exe)           # the graph with the learned weights as constants
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.errors import GraphValidationError
from edgenn.ir import DType, Graph, Node, Tensor
from edgenn.svm.buffer import CARRY_POLICIES
from edgenn.svm.errors import SvmParameterError
from edgenn.svm.ovo import class_pairs


def attach_svm_head(
    graph: Graph,
    feature_tensor: str,
    classes: Iterable[Any],
    capacity: int,
    C: float = 1.0,
    tol: float = 1e-3,
    max_iter: int = 100_000,
    carry: str = "support_vectors",
    carry_limit: int | None = None,
    init: Any = None,
    name: str = "svm",
) -> Graph:
    """A new graph: ``graph`` cut at ``feature_tensor`` followed by an SVM layer.

    Only the nodes ``feature_tensor`` depends on are kept; a feature tensor of rank > 2 is
    flattened (in edgenn's NHWC order). The SVM node's output ``<name>/scores`` (float32
    ``[N, len(classes)]``) becomes the only graph output. ``capacity`` is the training buffer
    size in samples; ``C``, ``tol``, ``max_iter`` are SMO's; ``carry`` and ``carry_limit`` set
    continued training (:mod:`edgenn.svm.buffer`). ``init`` starts from a fitted
    linear classifier over the same features (an SMOClassifier, or scikit-learn's
    ``SVC(kernel="linear")``) whose classes are a subset of ``classes``; without it every pair
    starts at zero and abstains until trained.
    """
    labels = tuple(_plain(c) for c in classes)
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise SvmParameterError(f"classes must be at least 2 distinct labels, got {list(labels)}")
    if carry not in CARRY_POLICIES:
        raise SvmParameterError(f"carry must be one of {', '.join(CARRY_POLICIES)}, got {carry!r}")
    feature = graph.tensor(feature_tensor)
    if feature.is_const or feature.dtype not in (DType.FLOAT32, DType.INT8):
        raise GraphValidationError(f"feature tensor {feature_tensor!r} must be a float32 or "
                                   f"int8 activation, got {feature.dtype.value}")
    nodes = _ancestors(graph, feature_tensor)
    tensors = dict(graph.tensors)
    if any(n.name == name for n in graph.nodes) or any(
            k == name or k.startswith(f"{name}/") for k in tensors):
        raise GraphValidationError(f"graph {graph.name!r} already has a node or tensor {name!r}")
    d = int(np.prod(feature.shape[1:]))
    x_name = feature_tensor
    if len(feature.shape) != 2:
        x_name = f"{name}/features"
        tensors[x_name] = Tensor(x_name, (feature.shape[0], d), feature.dtype, feature.quant)
        nodes.append(Node(f"{name}/flatten", "Reshape", (feature_tensor,), (x_name,),
                          {"shape": (feature.shape[0], d)}))
    w, b = initial_weights(labels, d, init)
    tensors[f"{name}/weights"] = Tensor.const(f"{name}/weights", w)
    tensors[f"{name}/bias"] = Tensor.const(f"{name}/bias", b)
    out = f"{name}/scores"
    tensors[out] = Tensor(out, (feature.shape[0], len(labels)), DType.FLOAT32)
    attrs = {"classes": labels, "buffer_capacity": int(capacity), "C": float(C),
             "tol": float(tol), "max_iter": int(max_iter), "carry": carry,
             "carry_limit": None if carry_limit is None else int(carry_limit)}
    nodes.append(Node(name, "SVM", (x_name, f"{name}/weights", f"{name}/bias"), (out,), attrs))
    perm = {k: v for k, v in graph.external_perm.items() if k in graph.inputs}
    head = graph.replace(name=f"{graph.name}+svm", outputs=(out,), external_perm=perm)
    return head.with_nodes(nodes, tensors).validate()


def penultimate_features(graph: Graph) -> str:
    """The input tensor of the graph's last FullyConnected layer: the features a classifier
    head sees (for the shipped MNIST CNN, the 64 ReLU outputs after the first dense layer)."""
    for node in reversed(graph.nodes):
        if node.op == "FullyConnected":
            return node.inputs[0]
    raise GraphValidationError(f"graph {graph.name!r} has no FullyConnected layer")


def initial_weights(classes: tuple[Any, ...], d: int,
                    init: Any = None) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Pair weights [n_pairs, d] and biases [n_pairs] (float32) for ``classes``: zeros, or the
    pairs of a fitted linear one-vs-one classifier mapped onto ``classes``' order."""
    pairs = class_pairs(len(classes))
    w = np.zeros((len(pairs), d), np.float32)
    b = np.zeros(len(pairs), np.float32)
    if init is None:
        return w, b
    try:
        init_classes = [_plain(c) for c in init.classes_]
        coef = np.asarray(init.coef_, np.float64)
        intercept = np.asarray(init.intercept_, np.float64)
    except AttributeError:
        raise SvmParameterError("init must be a fitted linear one-vs-one classifier "
                                "(SMOClassifier or SVC(kernel='linear'))") from None
    if coef.shape[1] != d:
        raise SvmParameterError(f"init was fitted on {coef.shape[1]} features, the head has {d}")
    missing = [c for c in init_classes if c not in classes]
    if missing:
        raise SvmParameterError(f"init knows classes {missing} that are not in {list(classes)}")
    if len(init_classes) == 2:  # scikit-learn's binary sign: positive means classes_[1]
        coef, intercept = -coef, -intercept
    slot = {pair: p for p, pair in enumerate(pairs)}
    for q, (i, j) in enumerate(class_pairs(len(init_classes))):
        a, c = classes.index(init_classes[i]), classes.index(init_classes[j])
        sign = 1.0 if a < c else -1.0  # pair (i, j) is positive for init class i
        p = slot[(min(a, c), max(a, c))]
        w[p] = sign * coef[q]
        b[p] = sign * intercept[q]
    return w, b


def trained_graph(exe: Any) -> Graph:
    """The executable's graph with every SVM layer's current (trained) weight and bias as
    its constants: compile it anywhere, export it, or attach it to a new executable."""
    graph: Graph = exe.graph
    tensors = dict(graph.tensors)
    for layer in exe.layers:
        if layer.node.op == "SVM":
            for name, value in zip(layer.node.inputs[1:3], (layer.weight, layer.bias),
                                   strict=True):
                tensors[name] = Tensor.const(name, np.array(value, np.float32))
    return graph.replace(tensors=tensors)


def _ancestors(graph: Graph, tensor: str) -> list[Node]:
    """The nodes ``tensor`` depends on, in graph order."""
    needed = {tensor}
    kept = []
    for node in reversed(graph.nodes):
        if needed.intersection(node.outputs):
            kept.append(node)
            needed.update(n for n in node.inputs if n)
    if tensor not in graph.inputs and not kept:
        raise GraphValidationError(f"graph {graph.name!r}: no node produces {tensor!r}")
    return kept[::-1]


def _plain(label: Any) -> Any:
    """numpy scalars -> Python scalars, so node attributes stay plain and printable."""
    return label.item() if isinstance(label, np.generic) else label
