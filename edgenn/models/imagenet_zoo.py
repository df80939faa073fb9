"""AlexNet, VGG16 and GoogLeNet at ImageNet shape with seeded random weights (ONNX).

The benchmark networks of Cha, Kwon and Lee (2023, docs/references.md), built as torchvision
defines them (no pretrained weights can be downloaded; latency and agreement with onnxruntime
do not depend on the values):

* ``alexnet``: torchvision's one-tower AlexNet (5 convolutions, 3 max pools, 3 dense),
  input 224x224, 0.71 GMAC;
* ``vgg16``: configuration D (13 3x3 convolutions, 5 max pools, 3 dense), 15.5 GMAC;
* ``googlenet``: Inception v1 as torchvision builds it: BatchNorm after every convolution,
  no LRN, the "5x5" branch with a 3x3 convolution, ceil-mode max pools; 1.5 GMAC.

Weights are He-initialised (dense layers too, so activations stay of order one through the
ReLUs), BatchNorm statistics random but well-conditioned. Dropout is inference-time
identity and is left out.
"""

from __future__ import annotations

import numpy as np
from onnx import ModelProto

from edgenn.models.zoo import OnnxBuilder


def _conv(b: OnnxBuilder, x: str, cin: int, cout: int, k: int, stride: int = 1,
          pad: int = 0, bias: bool = True) -> str:
    w = b.rng.normal(0.0, np.sqrt(2.0 / (cin * k * k)), (cout, cin, k, k)).astype(np.float32)
    inputs = [x, b.const(w, "w")]
    if bias:
        inputs.append(b.const(b.rng.normal(0, 0.05, cout).astype(np.float32), "b"))
    return b.node("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride],
                  pads=[pad, pad, pad, pad])


def _dense(b: OnnxBuilder, x: str, k: int, n: int, relu: bool = True) -> str:
    w = b.rng.normal(0.0, np.sqrt(2.0 / k), (n, k)).astype(np.float32)
    y = b.node("Gemm", [x, b.const(w, "fc_w"), b.const(b.rng.normal(0, 0.05, n)
                                                          .astype(np.float32), "fc_b")],
               transB=1)
    return b.relu(y) if relu else y


def _maxpool(b: OnnxBuilder, x: str, k: int, s: int, pad: int = 0, ceil: bool = False) -> str:
    return b.node("MaxPool", [x], kernel_shape=[k, k], strides=[s, s],
                  pads=[pad, pad, pad, pad], ceil_mode=int(ceil))


def alexnet(seed: int = 0, size: int = 224, classes: int = 1000) -> ModelProto:
    """torchvision AlexNet, input ``[1, 3, size, size]`` named ``input`` (size 224: 6x6 before
    the classifier, which torchvision's adaptive pool leaves unchanged)."""
    b = OnnxBuilder(seed)
    x = _maxpool(b, b.relu(_conv(b, "input", 3, 64, 11, 4, 2)), 3, 2)
    x = _maxpool(b, b.relu(_conv(b, x, 64, 192, 5, 1, 2)), 3, 2)
    x = b.relu(_conv(b, x, 192, 384, 3, 1, 1))
    x = b.relu(_conv(b, x, 384, 256, 3, 1, 1))
    x = _maxpool(b, b.relu(_conv(b, x, 256, 256, 3, 1, 1)), 3, 2)
    side = ((((size + 4 - 11) // 4 + 1 - 3) // 2 + 1 - 3) // 2 + 1 - 3) // 2 + 1
    x = b.node("Flatten", [x], axis=1)
    x = _dense(b, x, 256 * side * side, 4096)
    x = _dense(b, x, 4096, 4096)
    out = _dense(b, x, 4096, classes, relu=False)
    return b.model("alexnet", {"input": (1, 3, size, size)}, [out])


_VGG16 = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
          512, 512, 512, "M")


def vgg16(seed: int = 0, size: int = 224, classes: int = 1000) -> ModelProto:
    """VGG16 (configuration D), input ``[1, 3, size, size]`` (size a multiple of 32)."""
    b = OnnxBuilder(seed)
    x, cin = "input", 3
    for v in _VGG16:
        if v == "M":
            x = _maxpool(b, x, 2, 2)
        else:
            x = b.relu(_conv(b, x, cin, int(v), 3, 1, 1))
            cin = int(v)
    side = size // 32
    x = b.node("Flatten", [x], axis=1)
    x = _dense(b, x, 512 * side * side, 4096)
    x = _dense(b, x, 4096, 4096)
    out = _dense(b, x, 4096, classes, relu=False)
    return b.model("vgg16", {"input": (1, 3, size, size)}, [out])


def _basic(b: OnnxBuilder, x: str, cin: int, cout: int, k: int, stride: int = 1,
           pad: int = 0) -> str:
    """torchvision's BasicConv2d: convolution without bias, BatchNorm, ReLU."""
    return b.relu(b.bn(_conv(b, x, cin, cout, k, stride, pad, bias=False), cout))


def _inception(b: OnnxBuilder, x: str, cin: int, c1: int, c3r: int, c3: int, c5r: int,
               c5: int, pool: int) -> tuple[str, int]:
    b1 = _basic(b, x, cin, c1, 1)
    b2 = _basic(b, _basic(b, x, cin, c3r, 1), c3r, c3, 3, pad=1)
    b3 = _basic(b, _basic(b, x, cin, c5r, 1), c5r, c5, 3, pad=1)  # torchvision: 3x3 here
    b4 = _basic(b, _maxpool(b, x, 3, 1, 1, ceil=True), cin, pool, 1)
    return b.node("Concat", [b1, b2, b3, b4], axis=1), c1 + c3 + c5 + pool


_INCEPTION = {
    "3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64), "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64), "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128), "5b": (384, 192, 384, 48, 128, 128),
}


def googlenet(seed: int = 0, size: int = 224, classes: int = 1000) -> ModelProto:
    """torchvision GoogLeNet (Inception v1, no auxiliary heads), input ``[1, 3, size, size]``."""
    b = OnnxBuilder(seed)
    x = _maxpool(b, _basic(b, "input", 3, 64, 7, 2, 3), 3, 2, ceil=True)
    x = _basic(b, x, 64, 64, 1)
    x = _maxpool(b, _basic(b, x, 64, 192, 3, pad=1), 3, 2, ceil=True)
    c = 192
    for name, spec in _INCEPTION.items():
        x, c = _inception(b, x, c, *spec)
        if name in ("3b", "4e"):
            x = _maxpool(b, x, 3 if name == "3b" else 2, 2, ceil=True)
    g = b.node("GlobalAveragePool", [x])
    f = b.node("Flatten", [g], axis=1)
    out = _dense(b, f, c, classes, relu=False)
    return b.model("googlenet", {"input": (1, 3, size, size)}, [out])
