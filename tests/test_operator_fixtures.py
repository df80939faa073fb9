"""Models TensorFlow's converter wrote (``tools/make_operator_fixtures.py``): TFLite Micro's
``mnist_lstm`` network (UNIDIRECTIONAL_SEQUENCE_LSTM, float32 and int8), a SEANet-style int16
(16x8) and int8 audio block, and a MobileNetV3-style int16 and int8 block: bit-exact with TFLite
Micro on ref and on cortex-m4, and the float LSTM within 1e-5 relative."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite_micro")

from edgenn.api import compile_model  # noqa: E402
from edgenn.data.mnist import mnist_split  # noqa: E402
from edgenn.frontends.tflite import load_tflite  # noqa: E402
from edgenn.oracles.tflm import tflm_run  # noqa: E402

DIR = Path(__file__).parent / "fixtures" / "operators"
FILES = sorted(p.name for p in DIR.glob("*.tflite"))
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


def _inputs(name: str, n: int) -> list[np.ndarray]:
    graph = load_tflite((DIR / name).read_bytes(), name)
    rng = np.random.default_rng(0)
    xs = []
    for io in graph.inputs:
        t = graph.tensor(io)
        shape = (n, *t.shape[1:])
        if name.startswith("lstm_mnist"):  # real digits: the rows are the time steps
            x = mnist_split("test")[0][:n].astype(np.float32) / 255.0
            if t.quant is not None:
                q = t.quant
                x = np.clip(np.round(x / q.s) + q.zp, -128, 127)
            xs.append(x.astype(t.dtype.numpy))
        elif t.dtype.numpy.kind == "f":
            xs.append(rng.uniform(-1, 1, shape).astype(np.float32))
        else:
            info = np.iinfo(t.dtype.numpy)
            xs.append(rng.integers(info.min, info.max, shape, endpoint=True)
                      .astype(t.dtype.numpy))
    return xs


def _check(name: str, target: str, n: int) -> None:
    data = (DIR / name).read_bytes()
    xs = _inputs(name, n)
    want = tflm_run(data, *xs)
    got = compile_model(load_tflite(data, name), target).run(*xs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        else:
            assert int((g != w).sum()) == 0, f"{name} on {target}: {(g != w).sum()} mismatches"


@pytest.mark.parametrize("name", FILES)
def test_ref_matches_tflm(name: str) -> None:
    _check(name, "ref", 16)


@needs_arm
@pytest.mark.parametrize("name", [f for f in FILES if "float" not in f])
def test_cortex_m4_matches_tflm(name: str) -> None:
    _check(name, "cortex-m4", 4)
