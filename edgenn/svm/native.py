"""The C SMO solver of the device, compiled for the host and called through ctypes.

The C sources in ``edgenn/svm/c/`` are the code the Cortex-M firmware runs
(:mod:`edgenn.backends.cortexm.svm_device`). On first use the host compiler
(:mod:`edgenn.cc`) builds them in one of two precisions:

``"float64"``
    ``edgenn_real`` is double: the fast host trainer and a drop-in for the numpy solver
    (:func:`solve_binary_native` has :func:`~edgenn.svm.smo.solve_binary`'s signature and
    result). The kernel comes from one BLAS call (``X @ X.T``) when it fits ``max_gram_bytes``,
    else from dot products in C with an LRU row cache.
``"float32"``
    The device's arithmetic (float storage and accumulation, no fused multiply-add): results
    are bit-identical with the Cortex-M4F firmware, which is how the firmware is tested.

:class:`NativeSvmLayer` is the device's SVM layer (buffer, one-vs-one training, carry policy,
vote) run on the host; :func:`train_ovo_native` trains all pairs of a labelled set at once.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from edgenn.cc import compiler_available, load_library
from edgenn.errors import EdgennError
from edgenn.svm.errors import BufferFullError, SvmDataError, SvmParameterError
from edgenn.svm.smo import (
    DEFAULT_MAX_GRAM_BYTES,
    BinarySolution,
    check_finite,
    check_hyper,
    check_problem,
)

Precision = Literal["float64", "float32"]
C_DIR = Path(__file__).resolve().parent / "c"
SOURCES = ("edgenn_smo.c", "edgenn_svm.c", "edgenn_svm_host.c")
# The firmware is built with the same warnings (svm_device.py); -ffp-contract=off keeps a*b+c
# two roundings on every machine, as the Cortex-M4F build does.
WARNINGS = ("-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-Wconversion",
            "-Wdouble-promotion", "-Wshadow")
FLAGS: dict[str, tuple[str, ...]] = {
    "float64": ("-O3", *WARNINGS, "-DEDGENN_SMO_DOUBLE=1"),
    "float32": ("-O2", *WARNINGS, "-ffp-contract=off"),
}
DEFAULT_CACHE_BYTES = 1 << 27  # kernel rows cached by the C solver (128 MiB)

# storage codes of edgenn_smo.h
F32, S8, F64 = 0, 1, 2
CARRY = {"none": 0, "support_vectors": 1, "warm_start": 2}
Storage = Literal["float32", "int8", "float64"]
_STORAGE: dict[str, tuple[int, Any]] = {"float32": (F32, np.float32), "int8": (S8, np.int8),
                                        "float64": (F64, np.float64)}
PAIR_CONVERGED, PAIR_MAX_ITER, PAIR_SKIPPED = 0, 1, 2
_ERRORS = {
    -1: "bad argument", -2: "workspace too small", -3: "only one class",
    -10: "a label outside the classes", -11: "inconsistent layer settings",
    -12: "a NaN or infinite feature", -13: "the training buffer is empty",
}
_REAL = {"float64": np.float64, "float32": np.float32}
_VP, _U32, _I32, _U8P = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int32, ctypes.c_void_p


class _HostLayer(ctypes.Structure):
    """``host_layer`` of edgenn_svm_host.c."""

    _fields_ = [
        ("x", _VP), ("capacity", _U32), ("d", _U32), ("dtype", _U32),
        ("scale", ctypes.c_float), ("zero_point", _I32),
        ("labels", _VP), ("counts", _VP), ("n_classes", _U32),
        ("C", ctypes.c_double), ("tol", ctypes.c_double),
        ("max_iter", _U32), ("carry", _U32), ("carry_limit", _U32),
        ("alphas", _VP), ("w", _VP), ("b", _VP), ("active", _VP),
        ("iterations", _VP), ("pair_status", _VP), ("objective", _VP), ("keep", _VP),
        ("kernel_rows", _VP), ("work", _VP), ("work_bytes", ctypes.c_size_t),
        ("gram", _VP), ("gram_dtype", _U32), ("memo", _VP),
    ]


def available() -> bool:
    """True when a host C compiler is on PATH (the library is built on first use)."""
    return compiler_available()


@lru_cache(maxsize=2)
def library(precision: Precision = "float64") -> ctypes.CDLL:
    """The C solver built for the host in ``precision`` (compiled once, then cached on disk)."""
    if precision not in FLAGS:
        raise SvmParameterError(f"precision must be float64 or float32, got {precision!r}")
    lib = load_library([C_DIR / s for s in SOURCES], FLAGS[precision],
                       name=f"edgenn_svm_{precision}")
    lib.edgenn_host_real_bytes.restype = _U32
    lib.edgenn_host_workspace_bytes.restype = ctypes.c_size_t
    lib.edgenn_host_workspace_bytes.argtypes = [_U32, _U32]
    lib.edgenn_host_solve_binary.restype = _I32
    lib.edgenn_host_solve_binary.argtypes = [
        _VP, _U32, _U32, _U32, ctypes.c_float, _I32, _VP, _VP, _U32, _VP, _U32, _U32, _VP,
        ctypes.c_double, ctypes.c_double, _U32, _VP, ctypes.c_size_t, _VP, _VP, _VP]
    lib.edgenn_host_layer_bytes.restype = ctypes.c_size_t
    if lib.edgenn_host_layer_bytes() != ctypes.sizeof(_HostLayer):  # pragma: no cover
        raise EdgennError("edgenn_svm_host.c's host_layer and native._HostLayer differ")
    lib.edgenn_host_svm.restype = _I32
    lib.edgenn_host_svm.argtypes = [ctypes.POINTER(_HostLayer), _U32]
    lib.edgenn_host_predict.restype = None
    lib.edgenn_host_predict.argtypes = [_VP, _U32, _U32, _U32, ctypes.c_float, _I32, _VP, _VP,
                                        _VP, _U32, _VP, _VP, _VP]
    real = np.dtype(_REAL[precision]).itemsize
    if lib.edgenn_host_real_bytes() != real:  # pragma: no cover - a broken build
        raise EdgennError(f"{precision} SVM library has {lib.edgenn_host_real_bytes()}-byte reals")
    return lib


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else int(a.ctypes.data)


def _check_status(status: int, what: str) -> int:
    if status < 0:
        raise EdgennError(f"{what}: C SMO returned {status} ({_ERRORS.get(status, 'error')})")
    return status


def _workspace(lib: ctypes.CDLL, capacity: int, cache_reals: int) -> np.ndarray:
    """Workspace memory for `capacity` samples and a cache of `cache_reals` kernel values."""
    nbytes = int(lib.edgenn_host_workspace_bytes(capacity, min(cache_reals, 2**32 - 1)))
    return np.zeros((nbytes + 7) // 8, np.float64)  # 8-byte aligned


def _cache_reals(n: int, real_bytes: int, cache_bytes: int) -> int:
    rows = min(n, max(2, cache_bytes // max(1, real_bytes * n)))
    return rows * n


# ------------------------------------------------------------------------- binary problems
def solve_binary_native(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    C: float,
    tol: float = 1e-3,
    max_iter: int = 100_000,
    gram: npt.ArrayLike | None = None,
    *,
    alpha0: npt.ArrayLike | None = None,
    max_gram_bytes: int = DEFAULT_MAX_GRAM_BYTES,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    precision: Precision = "float64",
) -> BinarySolution:
    """The C solver on one binary problem: :func:`~edgenn.svm.smo.solve_binary`'s
    arguments and result (float64 arrays), computed by the device's C code.

    ``gram`` (float64 or float32 ``[n, n]``) is used as given; without it the float64 solver
    computes ``X @ X.T`` with BLAS when it fits ``max_gram_bytes`` and dot products in C
    otherwise (an LRU cache of ``cache_bytes`` holds kernel rows). ``alpha0`` warm-starts
    from a feasible point. ``precision="float32"`` runs the device's float build (samples
    rounded to float32, kernel by C dot products; ``gram`` is then not allowed).
    """
    x, labels = check_problem(X, y)
    C, tol, max_iter = check_hyper(C, tol, max_iter)
    lib = library(precision)
    real = _REAL[precision]
    n, d = x.shape
    if precision == "float32":
        if gram is not None:
            raise SvmParameterError("precision='float32' computes its kernel as the device does; "
                                    "do not pass gram")
        xs, dtype = np.ascontiguousarray(x, np.float32), F32
    else:
        xs, dtype = np.ascontiguousarray(x), F64
        if gram is None and 8 * n * n <= max_gram_bytes:
            gram = xs @ xs.T  # why: one BLAS call (syrk) beats n^2 / 2 dot products in C
    k = _gram_array(gram, n) if gram is not None else None
    zero_copy = k is not None and k.dtype == real
    a0 = None
    if alpha0 is not None:
        a0 = np.ascontiguousarray(alpha0, real)
        if a0.shape != (n,) or not np.isfinite(a0).all() or (a0 < 0).any() or (a0 > C).any():
            raise SvmParameterError(f"alpha0 must be [{n}] values in [0, C={C:g}]")
    cache = 0 if zero_copy else _cache_reals(n, np.dtype(real).itemsize, cache_bytes)
    work = _workspace(lib, n, cache)
    y8 = labels.astype(np.int8)
    alpha = np.zeros(n, real)
    w = np.zeros(d, real)
    info = np.zeros(8, np.float64)
    status = _check_status(lib.edgenn_host_solve_binary(
        _ptr(xs), n, d, dtype, 0.0, 0, None, _ptr(y8), n, _ptr(k),
        F64 if k is not None and k.dtype == np.float64 else F32, n, _ptr(a0), C, tol, max_iter,
        _ptr(work), work.nbytes, _ptr(alpha), _ptr(w), _ptr(info)), "solve_binary_native")
    return BinarySolution(alpha.astype(np.float64), w.astype(np.float64), float(info[0]),
                          float(info[1]), int(info[2]), status == 0)


def _gram_array(gram: npt.ArrayLike, n: int) -> np.ndarray:
    k = np.asarray(gram)
    if k.dtype not in (np.float32, np.float64):
        k = k.astype(np.float64)
    if k.shape != (n, n):
        raise SvmDataError(f"gram has shape {list(k.shape)}, expected [{n}, {n}]")
    return np.ascontiguousarray(k)


# ------------------------------------------------------------------------- the layer
@dataclass(frozen=True)
class NativeReport:
    """One training of a :class:`NativeSvmLayer`: per pair (scikit-learn's order)
    ``iterations``, ``status`` (0 converged, 1 max_iter, 2 skipped: a class absent) and
    ``objective``; ``kernel_rows`` computed; samples ``carried`` into the next batch."""

    samples: int
    iterations: npt.NDArray[np.uint32]
    status: npt.NDArray[np.uint8]
    objective: npt.NDArray[np.float64]
    kernel_rows: int
    carried: int

    @property
    def trained(self) -> npt.NDArray[np.bool_]:
        return self.status != PAIR_SKIPPED

    @property
    def converged(self) -> npt.NDArray[np.bool_]:
        return self.status == PAIR_CONVERGED


class NativeSvmLayer:
    """The device's SVM layer (``edgenn_svm.c``) on the host, its state in numpy arrays.

    ``classes`` are the labels (pair order follows them); features are stored as float32, or
    as int8 with ``scale`` / ``zero_point`` (``storage="int8"``, the device's compact buffer),
    or as float64 (host only, ``precision="float64"``: w exactly as numpy computes it).
    ``precision="float32"`` is the firmware's arithmetic bit for bit; ``"float64"`` the host
    trainer's. ``carry`` / ``carry_limit`` as the Python layer (:mod:`edgenn.svm.buffer`).
    ``kernel_memo`` keeps every kernel value of a training ([capacity, capacity]) so that
    pairs sharing samples never recompute a dot product (the results are identical).
    """

    def __init__(self, n_features: int, classes: Sequence[Any], capacity: int, C: float = 1.0,
                 tol: float = 1e-3, max_iter: int = 100_000, carry: str = "support_vectors",
                 carry_limit: int | None = None, *, storage: Storage = "float32",
                 scale: float = 1.0, zero_point: int = 0, precision: Precision = "float32",
                 cache_bytes: int = DEFAULT_CACHE_BYTES, kernel_memo: bool = False) -> None:
        self.C, self.tol, self.max_iter = check_hyper(C, tol, max_iter)
        self.classes = list(classes)
        self._index = {c: i for i, c in enumerate(self.classes)}
        k = len(self.classes)
        if len(self._index) != k or not 2 <= k <= 256:
            raise SvmParameterError(f"classes must be 2 to 256 distinct labels, got {self.classes}")
        if int(capacity) != capacity or capacity < 2:
            raise SvmParameterError(f"buffer capacity must be an integer >= 2, got {capacity!r}")
        if carry not in CARRY:
            raise SvmParameterError(f"carry must be one of {', '.join(CARRY)}, got {carry!r}")
        limit = capacity // 2 if carry_limit is None else int(carry_limit)
        if not 0 <= limit < capacity:
            raise SvmParameterError(f"carry_limit must be in [0, {capacity - 1}], got {limit}")
        if storage not in _STORAGE or (storage == "float64" and precision != "float64"):
            raise SvmParameterError(f"storage must be float32 or int8 (float64 with "
                                    f"precision='float64'), got {storage!r}")
        self.precision, self.storage = precision, storage
        self.capacity, self.d, self.k = int(capacity), int(n_features), k
        self.carry, self.carry_limit = carry, limit
        self.scale, self.zero_point = float(np.float32(scale)), int(zero_point)
        real = _REAL[precision]
        pairs = k * (k - 1) // 2
        self.lib = library(precision)
        self.x = np.zeros((self.capacity, self.d), _STORAGE[storage][1])
        self.labels = np.zeros(self.capacity, np.uint8)
        self.counts = np.zeros(2, np.uint32)  # count, carried
        self.alphas = np.zeros((self.capacity, k - 1), real)
        self.w = np.zeros((pairs, self.d), real)
        self.b = np.zeros(pairs, real)
        self.active = np.zeros(pairs, np.uint8)
        self._iterations = np.zeros(pairs, np.uint32)
        self._status = np.zeros(pairs, np.uint8)
        self._objective = np.zeros(pairs, real)
        self._keep = np.zeros(self.capacity, np.uint8)
        self._rows = np.zeros(1, np.uint32)
        self._work = _workspace(self.lib, self.capacity,
                                _cache_reals(self.capacity, np.dtype(real).itemsize, cache_bytes))
        # every kernel value of a training computed once (same results, fewer dot products)
        self._memo = np.zeros(self.capacity**2, real) if kernel_memo else None

    @property
    def count(self) -> int:
        return int(self.counts[0])

    def quantize(self, x: npt.ArrayLike) -> np.ndarray:
        """Features as the buffer stores them (int8: round half to even, saturate)."""
        if self.storage != "int8":
            return np.asarray(x, _STORAGE[self.storage][1])
        q = np.round(np.asarray(x, np.float32) / np.float32(self.scale)) + self.zero_point
        return np.clip(q, -128, 127).astype(np.int8)

    def class_indices(self, labels: npt.ArrayLike) -> npt.NDArray[np.uint8]:
        try:
            return np.array([self._index[v] for v in np.asarray(labels).tolist()], np.uint8)
        except KeyError as err:
            raise SvmDataError(f"label {err.args[0]!r} is not one of the classes "
                               f"{self.classes}") from None

    def append(self, x: npt.ArrayLike, labels: npt.ArrayLike) -> None:
        """Append samples (float features, or int8 already quantized for int8 storage)."""
        arr = np.asarray(x)
        xs = arr if arr.dtype == np.int8 and self.storage == "int8" else self.quantize(arr)
        idx = self.class_indices(labels)
        if xs.ndim != 2 or xs.shape[1] != self.d or len(idx) != len(xs):
            raise SvmDataError(f"features have shape {list(xs.shape)} with {len(idx)} labels; "
                               f"the buffer holds [N, {self.d}]")
        if len(xs) > self.capacity - self.count:
            raise BufferFullError(f"SVM training buffer is full ({self.count} of "
                                  f"{self.capacity} samples): train it before appending "
                                  f"{len(xs)} more")
        check_finite(xs, "feature ")
        n = self.count
        self.x[n:n + len(xs)] = xs
        self.labels[n:n + len(xs)] = idx
        self.alphas[n:n + len(xs)] = 0
        self.counts[0] = n + len(xs)

    def train(self, gram: np.ndarray | None = None, carry: bool = True) -> NativeReport:
        """SMO for every pair on the buffer (``edgenn_svm_train``; ``carry=False``:
        ``edgenn_svm_fit``, the buffer is kept as it is). ``gram``: the kernel over the
        buffer rows [capacity, capacity] (float64 or float32; float64 precision only)."""
        n = self.count
        if gram is not None and (self.precision != "float64" or carry):
            raise SvmParameterError("a precomputed gram needs precision='float64', carry=False")
        g = None if gram is None else _gram_array(gram, self.capacity)
        h = _HostLayer(
            _ptr(self.x), self.capacity, self.d, _STORAGE[self.storage][0],
            self.scale, self.zero_point, _ptr(self.labels), _ptr(self.counts), self.k,
            self.C, self.tol, self.max_iter, CARRY[self.carry], self.carry_limit,
            _ptr(self.alphas), _ptr(self.w), _ptr(self.b), _ptr(self.active),
            _ptr(self._iterations), _ptr(self._status), _ptr(self._objective),
            _ptr(self._keep), _ptr(self._rows), _ptr(self._work), self._work.nbytes,
            _ptr(g), F64 if g is not None and g.dtype == np.float64 else F32,
            _ptr(self._memo))
        _check_status(self.lib.edgenn_host_svm(ctypes.byref(h), 1 if carry else 0),
                      "SVM layer training")
        objective = np.where(self._status == PAIR_SKIPPED, np.nan, self._objective)
        return NativeReport(n, self._iterations.copy(), self._status.copy(),
                            objective.astype(np.float64), int(self._rows[0]),
                            int(self.counts[1]))

    def predict(self, x: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(labels, scores [N, k] (scikit-learn's ovr decision), pair decisions [N, n_pairs])."""
        xs = np.ascontiguousarray(self.quantize(x) if np.asarray(x).dtype != np.int8 else x)
        return predict_native(xs, self.w, self.b, self.classes, active=self.active,
                              storage=self.storage, scale=self.scale,
                              zero_point=self.zero_point, precision=self.precision)


def predict_native(x: npt.ArrayLike, w: np.ndarray, b: np.ndarray, classes: Sequence[Any], *,
                   active: np.ndarray | None = None, storage: str = "float32", scale: float = 1.0,
                   zero_point: int = 0, precision: Precision = "float32"
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The device's vote (``edgenn_svm_predict``) for samples ``x`` [N, d]: (labels,
    ovr scores [N, k], pair decisions [N, n_pairs])."""
    if storage not in _STORAGE or (storage == "float64" and precision != "float64"):
        raise SvmParameterError(f"storage {storage!r} with precision {precision!r}")
    lib, real = library(precision), _REAL[precision]
    code, dtype = _STORAGE[storage]
    xs = np.ascontiguousarray(x, dtype)
    k = len(classes)
    n, d = xs.shape
    wr, br = np.ascontiguousarray(w, real), np.ascontiguousarray(b, real)
    act = None if active is None else np.ascontiguousarray(active, np.uint8)
    labels = np.zeros(n, np.uint32)
    decision = np.zeros((n, k * (k - 1) // 2), real)
    scores = np.zeros((n, k), real)
    lib.edgenn_host_predict(_ptr(xs), n, d, code,
                            float(np.float32(scale)), int(zero_point), _ptr(wr), _ptr(br),
                            _ptr(act), k, _ptr(labels), _ptr(decision), _ptr(scores))
    return np.asarray(classes, dtype=object)[labels], scores, decision


# ------------------------------------------------------------------------- one-vs-one
class OvoSolution(NamedTuple):
    """Every pair's hyperplane (scikit-learn's pair order): ``w`` [n_pairs, d], ``b``
    [n_pairs], ``iterations`` [n_pairs]."""

    w: npt.NDArray[np.float64]
    b: npt.NDArray[np.float64]
    iterations: npt.NDArray[np.int64]


def train_ovo_native(X: npt.ArrayLike, labels: npt.ArrayLike, classes: Sequence[Any],
                     C: float = 1.0, tol: float = 1e-3, max_iter: int = 100_000, *,
                     precision: Precision = "float64",
                     max_gram_bytes: int = DEFAULT_MAX_GRAM_BYTES,
                     cache_bytes: int = DEFAULT_CACHE_BYTES) -> OvoSolution:
    """Train every pair of ``classes`` on ``X`` [n, d] with ``labels`` [n], as the device's
    layer trains one full buffer (``edgenn_svm_fit``: pair (a, c) on class a's samples then
    class c's, in the given order).

    ``precision="float64"``: the host trainer; the kernel is ``X @ X.T`` in float64 (one BLAS
    call) when it fits ``max_gram_bytes``, else C dot products of float32 samples.
    ``precision="float32"``: the firmware's arithmetic, bit for bit.
    """
    x = np.asarray(X)
    if x.ndim != 2:
        raise SvmDataError(f"X must be 2-D [n_samples, n_features], got shape {list(x.shape)}")
    n = len(x)
    layer = NativeSvmLayer(x.shape[1], classes, max(n, 2), C, tol, max_iter, carry="none",
                           precision=precision, cache_bytes=cache_bytes,
                           storage="float64" if precision == "float64" else "float32")
    layer.append(x, labels)
    gram = None
    if precision == "float64" and 8 * n * n <= max_gram_bytes:
        x64 = np.asarray(x, np.float64)
        gram = x64 @ x64.T  # why: BLAS syrk, far faster than C dot products on the host
    report = layer.train(gram=gram, carry=False)
    return OvoSolution(layer.w.astype(np.float64), layer.b.astype(np.float64),
                       report.iterations.astype(np.int64))
