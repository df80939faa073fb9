"""Re-make the converter-made models of the zoo (zoo/tflm_examples/, zoo/keras/) from their
public Keras definitions, with TensorFlow's converter and fixed seeds.

Run with a Python that has TensorFlow and tf_keras (CI does not; the outputs are committed)::

    /work/tfvenv/bin/python zoo/make/make_models.py [--only NAME,NAME] [--out zoo]

``zoo/tflm_examples/``: TensorFlow Lite Micro's example networks (tensorflow/lite/micro/examples
of tflite-micro; micro_speech's ``tiny_conv`` from TensorFlow's speech_commands ``models.py``;
person_detection's MobileNetV1 from ``tf.keras.applications``):

* ``hello_world_{float,int8}``: Dense(16, relu), Dense(16, relu), Dense(1), trained briefly on
  sin(x) as the example's train.py does;
* ``micro_speech_int8``: tiny_conv, a 49x40 spectrogram, Conv2D(8, 10x8, stride 2, SAME, relu),
  Dense(4), softmax; random weights;
* ``person_detection_int8``: MobileNetV1 alpha 0.25 on 96x96 grayscale, pooled, 2 logits;
  random weights;
* ``mnist_lstm_int8``: Input(28, 28), LSTM(20, return_sequences), Flatten, Dense(10, softmax)
  (UNIDIRECTIONAL_SEQUENCE_LSTM with variable state tensors); random weights.

``zoo/keras/``: the kinds of model users bring (issue 22), random weights:

* ``mbv2_kws_int8``: MobileNetV2-style keyword spotter, 14 identity-shortcut inverted residual
  blocks;
* ``tc_resnet_kws_int8``: TC-ResNet-style temporal convolutions, time as height with width 1,
  depthwise 9x1 SAME over a time axis that the strides make short;
* ``ds_cnn_kws_{int8,int16}``: DS-CNN keyword spotter (int16: the 16x8 scheme);
* ``vision_float32`` / ``vision_float16``: a small CNN, float, and with the converter's float16
  weight optimization (FLOAT16 constants + DEQUANTIZE);
* ``wakeword_sigmoid_float``: an openWakeWord-style classifier on 16x96 embeddings ending in a
  Sigmoid;
* ``lstm_denoiser_int8``: a streaming noise suppressor: one 257-bin frame an invocation,
  LSTM(64) whose state is kept as variable tensors, Dense(257, sigmoid) mask;
* ``ring_buffer_kws_int8``: a streaming keyword spotter with its frame history in a resource
  variable (CALL_ONCE, VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE), as micro-wakeword does.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # Keras 2: the converter's LSTM path
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

keras = tf.keras
L = keras.layers
ZOO = Path(__file__).resolve().parents[1]
SEED = 22


def seed(offset: int = 0) -> None:
    """Every model starts from the same seeds and layer names, so a re-run (of all models or
    of one) writes the same bytes."""
    keras.backend.clear_session()  # why: layer names count up over every model of a process
    keras.utils.set_random_seed(SEED + offset)


def representative(model_inputs: list[tuple[int, ...]],
                   n: int = 32) -> Callable[[], Iterator[list[np.ndarray]]]:
    """Seeded standard-normal calibration samples (the weights are random too)."""
    rng = np.random.default_rng(SEED)
    samples = [[rng.standard_normal(s).astype(np.float32) for s in model_inputs] for _ in range(n)]
    return lambda: iter(samples)


def convert(model: Any, scheme: str, shapes: list[tuple[int, ...]] | None = None,
            concrete: Any = None) -> bytes:
    """``float``, ``float16`` (weights), ``int8`` (full integer, int8 I/O) or ``int16`` (16x8,
    int16 I/O)."""
    if concrete is not None:
        conv = tf.lite.TFLiteConverter.from_concrete_functions([concrete], model)
    else:
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if shapes is None:
        shapes = [tuple(int(d) for d in t.shape) for t in model.inputs]
    if scheme == "float16":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]
    elif scheme in ("int8", "int16"):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = representative(shapes)
        ops = (tf.lite.OpsSet.TFLITE_BUILTINS_INT8 if scheme == "int8" else
               tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8)
        conv.target_spec.supported_ops = [ops]
        conv.inference_input_type = conv.inference_output_type = (
            tf.int8 if scheme == "int8" else tf.int16)
    return bytes(conv.convert())


# ------------------------------------------------------------------ TFLite Micro examples
def hello_world(scheme: str) -> bytes:
    seed()
    model = keras.Sequential([L.InputLayer(input_shape=(1,), batch_size=1),
                              L.Dense(16, activation="relu"), L.Dense(16, activation="relu"),
                              L.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(SEED)
    x = rng.uniform(0, 2 * math.pi, size=(1000, 1)).astype(np.float32)
    model.fit(x, np.sin(x), epochs=40, batch_size=64, verbose=0)  # briefly: weights that mean
    # something; TFLM's train.py runs 500 epochs
    if scheme == "int8":
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        grid = [[v.reshape(1, 1)] for v in x[:200]]
        conv.representative_dataset = lambda: iter(grid)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = conv.inference_output_type = tf.int8
        return bytes(conv.convert())
    return convert(model, "float")


def micro_speech() -> bytes:
    seed(1)
    model = keras.Sequential([
        L.InputLayer(input_shape=(49, 40, 1), batch_size=1),
        L.Conv2D(8, (10, 8), strides=2, padding="same", activation="relu"),
        L.Flatten(), L.Dense(4), L.Softmax()])
    return convert(model, "int8")


def person_detection() -> bytes:
    seed(2)
    net = keras.applications.MobileNet(input_shape=(96, 96, 1), alpha=0.25, weights=None,
                                       include_top=False)
    inp = L.Input((96, 96, 1), batch_size=1)
    # why no softmax: TFLite Micro's Python interpreter aborts on loading this network with an
    # int8 SOFTMAX over its 2 logits (tflite_micro 0.dev20261023); the logits are the output
    x = L.Dense(2)(L.GlobalAveragePooling2D()(net(inp)))
    return convert(keras.Model(inp, x), "int8")


def mnist_lstm() -> bytes:
    seed(3)
    model = keras.Sequential([L.InputLayer(input_shape=(28, 28), batch_size=1),
                              L.LSTM(20, return_sequences=True), L.Flatten(),
                              L.Dense(10, activation="softmax")])
    return convert(model, "int8")


# ------------------------------------------------------------------ the kinds users bring
def mbv2_kws() -> bytes:
    """49x10 MFCC, a strided stem, 14 inverted residual blocks (expand 1x1, depthwise 3x3,
    project 1x1) with identity shortcuts, pooled classifier of 12 keywords."""
    seed(4)
    x = inp = L.Input((49, 10, 1), batch_size=1)
    x = L.ReLU(6.0)(L.Conv2D(16, 3, strides=2, padding="same")(x))
    for _ in range(14):
        y = L.ReLU(6.0)(L.Conv2D(32, 1)(x))
        y = L.ReLU(6.0)(L.DepthwiseConv2D(3, padding="same")(y))
        x = L.Add()([x, L.Conv2D(16, 1)(y)])
    x = L.GlobalAveragePooling2D()(x)
    return convert(keras.Model(inp, L.Softmax()(L.Dense(12)(x))), "int8")


def tc_resnet_kws() -> bytes:
    """TC-ResNet8-style: MFCC coefficients as channels (time x 1 x 40), 3x1 / 9x1 temporal
    convolutions with stride-2 residual stages; the last depthwise 9x1 SAME sees 2 time steps."""
    seed(5)
    x = inp = L.Input((16, 1, 40), batch_size=1)
    x = L.Conv2D(16, (3, 1), padding="same", use_bias=False)(x)
    for ch in (24, 32, 48):
        y = L.ReLU()(L.Conv2D(ch, (9, 1), strides=(2, 1), padding="same")(x))
        y = L.DepthwiseConv2D((9, 1), padding="same")(y)
        short = L.Conv2D(ch, 1, strides=(2, 1))(x)
        x = L.ReLU()(L.Add()([y, short]))
    x = L.GlobalAveragePooling2D()(x)
    return convert(keras.Model(inp, L.Softmax()(L.Dense(12)(x))), "int8")


def ds_cnn_kws(scheme: str) -> bytes:
    seed(6)
    x = inp = L.Input((49, 10, 1), batch_size=1)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(64, (10, 4), strides=2, padding="same")(x)))
    for _ in range(4):
        x = L.ReLU()(L.BatchNormalization()(L.DepthwiseConv2D(3, padding="same")(x)))
        x = L.ReLU()(L.BatchNormalization()(L.Conv2D(64, 1)(x)))
    x = L.AveragePooling2D(pool_size=(25, 5))(x)
    x = L.Flatten()(x)
    return convert(keras.Model(inp, L.Softmax()(L.Dense(12)(x))), scheme)


def vision(scheme: str) -> bytes:
    seed(7)
    x = inp = L.Input((32, 32, 3), batch_size=1)
    for ch in (16, 32, 64):
        x = L.Conv2D(ch, 3, padding="same", activation="relu")(x)
        x = L.MaxPooling2D()(x)
    x = L.Dense(10)(L.Flatten()(x))
    return convert(keras.Model(inp, L.Softmax()(x)), scheme)


def wakeword_sigmoid() -> bytes:
    seed(8)
    model = keras.Sequential([L.InputLayer(input_shape=(16, 96), batch_size=1), L.Flatten(),
                              L.Dense(64), L.LayerNormalization(), L.ReLU(),
                              L.Dense(64, activation="relu"), L.Dense(1, activation="sigmoid")])
    return convert(model, "float")


def lstm_denoiser() -> bytes:
    seed(9)
    model = keras.Sequential([L.InputLayer(input_shape=(1, 257), batch_size=1),
                              L.Dense(64, activation="relu"),
                              L.LSTM(64, return_sequences=True),
                              L.Dense(257, activation="sigmoid")])
    return convert(model, "int8")


class _RingBuffer(tf.Module):
    """One 40-bin frame an invocation into a 5-frame history kept in a resource variable;
    a 5x1 convolution over the history, a Dense classifier."""

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(SEED + 10)
        self.state = tf.Variable(np.zeros((1, 5, 1, 40), np.float32), trainable=False)
        self.w = tf.constant(rng.standard_normal((5, 1, 40, 16)).astype(np.float32) * 0.1)
        self.b = tf.constant(rng.standard_normal((16,)).astype(np.float32) * 0.1)
        self.fc = tf.constant(rng.standard_normal((16, 3)).astype(np.float32) * 0.3)

    @tf.function(input_signature=[tf.TensorSpec([1, 1, 1, 40], tf.float32)])
    def __call__(self, frame: tf.Tensor) -> tf.Tensor:
        history = tf.concat([self.state[:, 1:], frame], axis=1)
        self.state.assign(history)
        y = tf.nn.relu(tf.nn.conv2d(history, self.w, 1, "VALID") + self.b)
        return tf.nn.softmax(tf.matmul(tf.reshape(y, (1, 16)), self.fc))


def ring_buffer_kws() -> bytes:
    seed(10)
    module = _RingBuffer()
    return convert(module, "int8", [(1, 1, 1, 40)], module.__call__.get_concrete_function())


MODELS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "hello_world_float": ("tflm_examples", lambda: hello_world("float")),
    "hello_world_int8": ("tflm_examples", lambda: hello_world("int8")),
    "micro_speech_int8": ("tflm_examples", micro_speech),
    "person_detection_int8": ("tflm_examples", person_detection),
    "mnist_lstm_int8": ("tflm_examples", mnist_lstm),
    "mbv2_kws_int8": ("keras", mbv2_kws),
    "tc_resnet_kws_int8": ("keras", tc_resnet_kws),
    "ds_cnn_kws_int8": ("keras", lambda: ds_cnn_kws("int8")),
    "ds_cnn_kws_int16": ("keras", lambda: ds_cnn_kws("int16")),
    "vision_float32": ("keras", lambda: vision("float")),
    "vision_float16": ("keras", lambda: vision("float16")),
    "wakeword_sigmoid_float": ("keras", wakeword_sigmoid),
    "lstm_denoiser_int8": ("keras", lstm_denoiser),
    "ring_buffer_kws_int8": ("keras", ring_buffer_kws),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ZOO)
    ap.add_argument("--only", default="", help="comma-separated model names")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    for name in names:
        folder, make = MODELS[name]
        data = make()
        path = args.out / folder / f"{name}.tflite"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"wrote {path} ({len(data):,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
