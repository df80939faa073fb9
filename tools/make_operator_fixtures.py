"""Real TensorFlow-converted models for the operators of issue 14: LSTM, int16 (16x8), and the
MobileNetV3 / U-Net / SEANet layer types, written as committed TFLite test fixtures.

Run with a Python that has TensorFlow and tf_keras (CI does not; the outputs are committed)::

    python3.11 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu tf_keras
    /tmp/tfvenv/bin/python tools/make_operator_fixtures.py [--out tests/fixtures/operators]

Writes (``*_int8``: full int8; ``*_int16``: TFLite's 16x8 scheme, int16 activations and int8
weights, via ``EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8``):

* ``lstm_mnist_{float,int8}.tflite``: TFLite Micro's ``mnist_lstm`` example network (rows of
  the digit as 28 time steps, ``LSTM(20, return_sequences=True)``, Flatten, Dense(10),
  softmax), trained on the house MNIST split: UNIDIRECTIONAL_SEQUENCE_LSTM;
* ``seanet_{int8,int16}.tflite``: a SEANet-style 1-D audio block (Conv1D, LeakyReLU / ELU-free
  residual units, Subtract, Conv1DTranspose, Cropping1D -> STRIDED_SLICE), untrained;
* ``mbv3_{int8,int16}.tflite``: a MobileNetV3-style block (hard-swish, depthwise, squeeze-and-
  excite with hard-sigmoid, Maximum / Minimum, bilinear and nearest up-sampling, concat,
  space-to-depth / depth-to-space), untrained;
and a README.md listing each file's operators and, for the LSTM, its accuracy in TFLite Micro.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # Keras 2: LSTM converts to the fused op
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SEED = 0


def lstm_mnist(keras):  # type: ignore[no-untyped-def]
    L = keras.layers
    return keras.Sequential([L.InputLayer(input_shape=(28, 28), batch_size=1),
                             L.LSTM(20, return_sequences=True), L.Flatten(),
                             L.Dense(10, activation="softmax")])


def seanet(keras):  # type: ignore[no-untyped-def]
    L = keras.layers
    x = inp = L.Input((64, 4), batch_size=1)
    x = L.Conv1D(8, 7, padding="same")(x)
    for dilation in (1, 3):
        y = L.LeakyReLU(0.2)(x)
        y = L.Conv1D(8, 3, dilation_rate=dilation, padding="same")(y)
        y = L.LeakyReLU(0.2)(y)
        y = L.Conv1D(8, 1)(y)
        x = L.Add()([x, y])
    x = L.LeakyReLU(0.2)(x)
    down = L.Conv1D(16, 4, strides=2, padding="same")(x)
    up = L.Conv1DTranspose(8, 4, strides=2, padding="same")(L.LeakyReLU(0.2)(down))
    x = L.Subtract()([x, up])
    x = L.Cropping1D((3, 5))(x)
    return keras.Model(inp, L.Conv1D(4, 3, padding="same")(x))


def mbv3(keras, tf, int16: bool = False):  # type: ignore[no-untyped-def]
    """``int16``: without hard-swish and the space/depth shuffles (TensorFlow's 16x8 quantizer
    has none) and with nearest up-sampling and a mean instead of bilinear up-sampling and a
    max (TFLite Micro has no int16 RESIZE_BILINEAR or REDUCE_MAX)."""
    L = keras.layers
    x = inp = L.Input((16, 16, 3), batch_size=1)
    x = L.Conv2D(16, 3, strides=2, padding="same")(x)
    x = L.Activation(tf.nn.relu6)(x)
    if not int16:
        x = L.Lambda(lambda t: t * tf.nn.relu6(t + 3.0) / 6.0)(x)  # hard-swish
    y = L.DepthwiseConv2D(3, padding="same")(x)
    s = L.GlobalAveragePooling2D(keepdims=True)(y)
    s = L.Conv2D(4, 1, activation="relu")(s)
    s = L.Conv2D(16, 1)(s)
    s = L.Lambda(lambda t: tf.nn.relu6(t + 3.0) / 6.0)(s)  # hard-sigmoid
    y = L.Multiply()([y, s])
    y = L.Lambda(lambda t: tf.maximum(tf.minimum(t, 2.0), -1.0))(y)
    if int16:
        z = L.Conv2D(16, 1)(y)
    else:
        z = L.Lambda(lambda t: tf.nn.space_to_depth(t, 2))(y)
        z = L.Conv2D(16, 1)(z)
        z = L.Lambda(lambda t: tf.nn.depth_to_space(t, 2))(z)
    u = L.Conv2D(8, 1)(L.MaxPooling2D(2)(y))
    u1 = L.UpSampling2D(2, interpolation="nearest" if int16 else "bilinear")(u)
    u2 = L.UpSampling2D(2, interpolation="nearest")(u)
    x = L.Concatenate()([z, u1, u2])
    reduce = tf.reduce_mean if int16 else tf.reduce_max
    x = L.Lambda(lambda t: reduce(t, axis=[1, 2]))(x)
    return keras.Model(inp, L.Dense(5)(x))


def convert(tf, model, shape: tuple[int, ...], mode: str,  # type: ignore[no-untyped-def]
            x_rep: np.ndarray | None = None) -> bytes:
    fn = tf.function(lambda x: model(x))
    concrete = fn.get_concrete_function(tf.TensorSpec(shape, tf.float32))
    conv = tf.lite.TFLiteConverter.from_concrete_functions([concrete], model)
    if mode == "float":
        return bytes(conv.convert())
    rng = np.random.default_rng(SEED)

    def representative() -> Iterator[list[np.ndarray]]:
        for k in range(64):
            if x_rep is not None:
                yield [x_rep[k : k + 1].astype(np.float32)]
            else:
                yield [rng.uniform(-1, 1, shape).astype(np.float32)]

    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    if mode == "int8":
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    else:
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        conv.inference_input_type = tf.int16
        conv.inference_output_type = tf.int16
    return bytes(conv.convert())


def operators(data: bytes) -> list[str]:
    from tflite.utils import BUILTIN_OPCODE2NAME

    from edgenn.frontends.tflite.reader import read_tflite

    raw = read_tflite(data, "fixture")
    return sorted({BUILTIN_OPCODE2NAME[o.opcode] for o in raw.operators})


def tflm_lstm_accuracy(data: bytes, x: np.ndarray, y: np.ndarray) -> float:
    from edgenn.oracles.tflm import tflm_interpreter

    interp = tflm_interpreter(data)
    det = interp.get_input_details(0)
    scale, zp = det["quantization_parameters"]["scales"][0], det[
        "quantization_parameters"]["zero_points"][0]
    hits = 0
    for k in range(len(x)):
        q = np.clip(np.round(x[k : k + 1] / scale) + zp, -128, 127).astype(np.int8)
        interp.set_input(q, 0)
        interp.invoke()
        hits += int(np.argmax(interp.get_output(0)) == y[k])
    return hits / len(x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "fixtures" / "operators"))
    ap.add_argument("--only", nargs="*", default=None,
                    help="rewrite only these fixtures (names without .tflite)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import tensorflow as tf
    import tf_keras as keras

    from edgenn.data.mnist import mnist_split

    tf.random.set_seed(SEED)
    np.random.seed(SEED)
    xtr, ytr = mnist_split("train")
    xte, yte = mnist_split("test")
    xtr_f, xte_f = xtr.astype(np.float32) / 255.0, xte.astype(np.float32) / 255.0
    def wanted(name: str) -> bool:
        return args.only is None or name in args.only

    if wanted("lstm_mnist_float") or wanted("lstm_mnist_int8"):
        model = lstm_mnist(keras)
        model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
        # why batch 1: the model's input layer fixes the batch (as TFLM's example does)
        model.fit(xtr_f.reshape(-1, 28, 28), ytr, epochs=1, batch_size=1, verbose=2)
        (out / "lstm_mnist_float.tflite").write_bytes(convert(tf, model, (1, 28, 28), "float"))
        (out / "lstm_mnist_int8.tflite").write_bytes(
            convert(tf, model, (1, 28, 28), "int8", xtr_f))
    sea = seanet(keras)
    for mode in ("int8", "int16"):
        if wanted(f"seanet_{mode}"):
            (out / f"seanet_{mode}.tflite").write_bytes(convert(tf, sea, (1, 64, 4), mode))
        if wanted(f"mbv3_{mode}"):
            mb = mbv3(keras, tf, int16=mode == "int16")
            (out / f"mbv3_{mode}.tflite").write_bytes(convert(tf, mb, (1, 16, 16, 3), mode))
    lines = ["# Operator fixtures", "",
             "Written by `tools/make_operator_fixtures.py` (TensorFlow's converter; see its "
             "docstring).", "", "| file | bytes | operators |", "|---|---:|---|"]
    for path in sorted(out.glob("*.tflite")):
        data = path.read_bytes()
        lines.append(f"| {path.name} | {len(data)} | {', '.join(operators(data))} |")
    lstm = (out / "lstm_mnist_int8.tflite").read_bytes()
    acc = tflm_lstm_accuracy(lstm, xte_f[:500], yte[:500])
    lines += ["", f"lstm_mnist_int8.tflite: {acc:.1%} top-1 in TFLite Micro on the first 500 "
              "images of the house MNIST test split.", ""]
    (out / "README.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
