"""SVM: a linear one-vs-one SVM head that learns on the device (build / run / train).

Inputs: features ``x[N, d]`` (float32, or int8 dequantized with its scale and zero point, as
the device does), the weights ``w[n_pairs, d]`` and bias ``b[n_pairs]`` (float32 constants:
the initial values; the layer trains its own copies, :attr:`SVM.weight` and
:attr:`SVM.bias`). Attributes: ``classes`` (the labels, in pair order), ``buffer_capacity``,
``C``, ``tol``, ``max_iter``, ``carry`` and ``carry_limit`` (see
:mod:`edgenn.svm.buffer`).

Output: float32 ``[N, n_classes]``, scikit-learn's "ovr" decision of the pairs: votes plus
the summed pair confidences squashed into (-1/3, 1/3). Its argmax is a class with the most
votes; among classes with equally many votes it is the most confident one (scikit-learn's
``break_ties=True``), where LIBSVM's ``predict`` and the device's vote take the lowest class
index. A pair whose weights and bias are all zero has never been trained and abstains (no vote,
no confidence), so classes the layer has not seen yet do not collect votes by default.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.backends.ref.kernels.common import per_tensor
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.svm.buffer import BatchReport, TrainingBuffer
from edgenn.svm.errors import SvmDataError
from edgenn.svm.ovo import ovr_decision


@register("SVM", DType.FLOAT32, DType.INT8)
class SVM(Layer):
    """The SVM head. ``train(x, labels=...)`` appends to the buffer and trains whenever it
    fills; ``append`` and ``fit_buffer`` give finer control."""

    trainable = True

    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        w, b = self.const(1), self.const(2)
        assert w is not None and b is not None
        self.classes: tuple[Any, ...] = tuple(self.node.attr("classes"))
        self.k = len(self.classes)
        self._index = {label: i for i, label in enumerate(self.classes)}
        if len(self._index) != self.k:
            raise SvmDataError(f"{self.node}: classes {list(self.classes)} are not unique")
        # why: the graph's constants are read-only; training updates these copies in place
        self.weight = np.array(w, np.float32)
        self.bias = np.array(b, np.float32)
        self.int8 = x.dtype is DType.INT8
        if self.int8:
            q = per_tensor(self, x, "input")
            self.scale, self.zero_point = np.float32(q.s), q.zp
        self.buffer = TrainingBuffer(
            x.shape[1], self.k, int(self.node.attr("buffer_capacity")),
            C=float(self.node.attr("C", 1.0)), tol=float(self.node.attr("tol", 1e-3)),
            max_iter=int(self.node.attr("max_iter", 100_000)),
            carry=str(self.node.attr("carry", "support_vectors")),
            carry_limit=self.node.attr("carry_limit"))

    # -- run ----------------------------------------------------------------------------------
    def features(self, x: np.ndarray) -> npt.NDArray[np.float32]:
        """The float32 feature vectors the SVM sees (int8 dequantized as TFLite does)."""
        if self.int8:
            return (x.astype(np.float32) - np.float32(self.zero_point)) * self.scale
        return np.asarray(x, np.float32)

    @property
    def active_pairs(self) -> npt.NDArray[np.bool_]:
        """Pairs that vote: those with a nonzero weight or bias (trained or initialised)."""
        return self.weight.any(axis=1) | (self.bias != 0)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        dec = self.features(xs[0]) @ self.weight.T + self.bias
        return [ovr_decision(dec, self.k, self.active_pairs).astype(np.float32)]

    # -- train --------------------------------------------------------------------------------
    def train(self, *xs: np.ndarray, labels: np.ndarray) -> list[BatchReport]:
        """Append ``xs[0]`` [N, d] with ``labels`` [N] (values from ``classes``), training each
        time the buffer fills (so any N is accepted); returns one report per training step."""
        x, index = self._checked(xs[0], labels)
        reports = []
        start = 0
        while start < len(x):
            take = min(self.buffer.room, len(x) - start)
            self.buffer.append(x[start:start + take], index[start:start + take])
            start += take
            if self.buffer.room == 0:
                reports.append(self.fit_buffer())
        return reports

    def append(self, x: np.ndarray, labels: npt.ArrayLike) -> None:
        """Add samples without training; BufferFullError when they do not fit."""
        self.buffer.append(*self._checked(x, labels))

    def fit_buffer(self) -> BatchReport:
        """Train on what the buffer holds now (full or not), update weight and bias in place,
        keep the carried samples and clear the rest."""
        if self.buffer.count == 0:
            raise SvmDataError(f"{self.node}: the training buffer is empty")
        return self.buffer.train(self.weight, self.bias)

    def _checked(self, x: np.ndarray, labels: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        feats = self.features(np.asarray(x))
        lab = np.asarray(labels)
        if feats.ndim != 2 or lab.shape != (len(feats),):
            raise SvmDataError(f"{self.node}: {len(feats)} samples need {len(feats)} labels, "
                               f"got shape {list(lab.shape)}")
        try:
            index = np.array([self._index[v] for v in lab.tolist()], np.int64)
        except KeyError as err:
            raise SvmDataError(f"{self.node}: label {err.args[0]!r} is not one of its classes "
                               f"{list(self.classes)}") from None
        return feats, index
