"""Generate the firmware project of an SVM layer that learns on a Cortex-M core.

The project is the SVM's C (``edgenn/svm/c``: the same files the host binding compiles),
the firmware harness ``edgenn_svm_firmware.c`` (every array static, no malloc), a generated
``svm_config.h`` (sizes and settings) and ``svm_weights.c`` (the layer's initial weights), plus
the usual startup code, linker script, Makefile and manifest.json. Float arithmetic is float32
with ``-ffp-contract=off``: bit-identical with the host's float32 build of the same sources.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.backends.c_literals import c_float, c_initializer
from edgenn.backends.cortexm.codegen import templates
from edgenn.backends.cortexm.codegen.project import flags
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import PlanError
from edgenn.svm.errors import SvmParameterError
from edgenn.utils import atomic_write_bytes

SVM_C_DIR = Path(__file__).resolve().parents[3] / "svm" / "c"
HARNESS = Path(__file__).resolve().parents[1] / "c" / "edgenn_svm_firmware.c"
SVM_SOURCES = ("edgenn_smo.c", "edgenn_svm.c")
SVM_HEADERS = ("edgenn_smo.h", "edgenn_smo_dot.h", "edgenn_svm.h")
EXTRA_CFLAGS = ("-ffp-contract=off", "-Wconversion", "-Wdouble-promotion", "-Wshadow")
ENTRY_POINTS = ("edgenn_invoke", "edgenn_svm_append_input", "edgenn_svm_train_buffer",
                "edgenn_svm_count", "edgenn_mark")
DEFAULT_STACK_BYTES = 2048  # measured high water ~0.2 KiB (train and predict)
DEFAULT_CACHE_BYTES = 32 * 1024
MEMO_AUTO_BYTES = 64 * 1024
CARRY = {"none": "EDGENN_SVM_CARRY_NONE", "support_vectors": "EDGENN_SVM_CARRY_SUPPORT_VECTORS",
         "warm_start": "EDGENN_SVM_CARRY_WARM_START"}
REAL_BYTES = 4  # edgenn_real is float on the device
WORKSPACE_BYTES_PER_SAMPLE = 3 * REAL_BYTES + 4 * 4 + 3  # alpha grad diag, 4 index arrays,
# y status set


@dataclass(frozen=True)
class SvmConfig:
    """Sizes and training settings of a device SVM layer.

    ``storage``: the buffer's element type, ``"float32"`` or ``"int8"`` (``real = scale * (q -
    zero_point)``: 4x less RAM, exact int32 dot products). ``kernel_memo``: keep every kernel
    value of a training in a [capacity, capacity] float array, so the pairs a class is in share
    its dot products (with 10 classes ~45% fewer of them; the results are identical); None:
    when it takes at most 64 KiB (capacity <= 128) and still fits the RAM (:meth:`for_ram`).
    ``cache_len``: kernel values the SMO row cache holds (None: rows of ~1.5x a balanced
    pair's size, at least two rows of the whole buffer, at most 32 KiB unless two rows need
    more). int8 buffers also use the cache as inference scratch (the sample widened once), so
    it holds at least d values.
    """

    capacity: int
    n_features: int
    n_classes: int
    C: float = 1.0
    tol: float = 1e-3
    max_iter: int = 100_000
    carry: str = "support_vectors"
    carry_limit: int | None = None
    storage: str = "float32"
    scale: float = 1.0
    zero_point: int = 0
    cache_len: int | None = None
    kernel_memo: bool | None = None

    def __post_init__(self) -> None:
        if not (2 <= self.n_classes <= 256):
            raise SvmParameterError(f"an SVM layer needs 2 to 256 classes, got {self.n_classes}")
        if self.capacity < 2 or self.n_features < 1:
            raise SvmParameterError(f"buffer of {self.capacity} samples x {self.n_features} "
                                    "features: need at least 2 samples and 1 feature")
        if self.carry not in CARRY:
            raise SvmParameterError(f"carry must be one of {', '.join(CARRY)}, got {self.carry!r}")
        if not 0 <= self.limit < self.capacity:
            raise SvmParameterError(f"carry_limit must be in [0, {self.capacity - 1}], "
                                    f"got {self.carry_limit}")
        if self.storage not in ("float32", "int8"):
            raise SvmParameterError(f"storage must be float32 or int8, got {self.storage!r}")
        if self.storage == "int8" and self.n_features > 33025:
            raise SvmParameterError("int8 storage supports up to 33,025 features (exact int32 "
                                    f"dot products), got {self.n_features}")
        if not (math.isfinite(self.C) and self.C > 0 and math.isfinite(self.tol) and self.tol > 0):
            raise SvmParameterError(f"C and tol must be positive, got C={self.C}, tol={self.tol}")
        if self.cache_len is not None and self.cache_len < 2 * self.capacity:
            raise SvmParameterError(f"the kernel cache needs at least 2 rows of {self.capacity} "
                                    f"values, got {self.cache_len}")

    def ram_bytes(self, stack_bytes: int) -> int:
        """RAM the firmware needs: the static arrays, the stack and ~256 B of the rest (the
        layer struct, startup, libc state)."""
        return sum(self.static_bytes().values()) + stack_bytes + 256

    def for_ram(self, ram_bytes: int, stack_bytes: int) -> SvmConfig:
        """This config with an automatic kernel memo dropped if it would not fit ``ram_bytes``."""
        if self.kernel_memo is None and self.memo and self.ram_bytes(stack_bytes) > ram_bytes:
            return replace(self, kernel_memo=False)
        return self

    @property
    def pairs(self) -> int:
        return self.n_classes * (self.n_classes - 1) // 2

    @property
    def limit(self) -> int:
        return self.capacity // 2 if self.carry_limit is None else int(self.carry_limit)

    @property
    def element_bytes(self) -> int:
        return 1 if self.storage == "int8" else 4

    @property
    def memo(self) -> bool:
        """Whether the firmware keeps the kernel memo."""
        if self.kernel_memo is not None:
            return bool(self.kernel_memo)
        return self.capacity**2 * REAL_BYTES <= MEMO_AUTO_BYTES

    @property
    def cache(self) -> int:
        """Kernel values in the SMO row cache."""
        if self.cache_len is not None:
            return int(self.cache_len)
        scratch = self.n_features if self.storage == "int8" else 0
        rows = min(self.capacity, math.ceil(3 * self.capacity / self.n_classes))
        return max(2 * self.capacity, scratch,
                   min(rows * rows, DEFAULT_CACHE_BYTES // REAL_BYTES))

    def static_bytes(self) -> dict[str, int]:
        """RAM of the layer's static arrays by purpose (what the firmware's symbols add up to,
        padding aside)."""
        k, d, cap = self.n_classes, self.n_features, self.capacity
        in_bytes = d * self.element_bytes
        return {
            "buffer": cap * in_bytes,
            "labels+flags": 2 * cap,
            "alphas": cap * (k - 1) * REAL_BYTES if self.carry != "none" else 0,
            "smo_workspace": cap * WORKSPACE_BYTES_PER_SAMPLE,
            "kernel_cache": self.cache * REAL_BYTES,
            "kernel_memo": cap * cap * REAL_BYTES if self.memo else 0,
            "weights": self.pairs * (d + 1) * REAL_BYTES + self.pairs,
            "report": self.pairs * (2 * REAL_BYTES + 1),
            "io": (in_bytes + 7) // 8 * 8 + (self.pairs + k + 1) * 4,
        }


@dataclass
class SvmProject:
    """A generated SVM firmware project: its directory, build inputs and manifest."""

    out_dir: Path
    core: Core
    config: SvmConfig
    sources: list[str]
    cflags: list[str]
    ldflags: list[str]
    manifest: dict[str, Any]


def _array(values: np.ndarray, per_line: int = 6) -> str:
    return c_initializer(values.ravel().tolist(), "float", per_line)


def _config_h(cfg: SvmConfig) -> str:
    int8 = cfg.storage == "int8"
    return f"""/* Generated by edgenn: sizes and settings of the on-device SVM layer. */
#ifndef SVM_CONFIG_H
#define SVM_CONFIG_H

#include <stdint.h>

#define SVM_CAPACITY {cfg.capacity}u    /* training buffer, samples */
#define SVM_FEATURES {cfg.n_features}u
#define SVM_CLASSES {cfg.n_classes}u
#define SVM_STORAGE {"EDGENN_SMO_S8" if int8 else "EDGENN_SMO_F32"}
typedef {"int8_t" if int8 else "float"} svm_feature_t;
#define SVM_SCALE {c_float(cfg.scale)}   /* int8 storage: real = scale * (q - zero point) */
#define SVM_ZERO_POINT ({int(cfg.zero_point)})
#define SVM_C {c_float(cfg.C)}
#define SVM_TOL {c_float(cfg.tol)}
#define SVM_MAX_ITER {int(cfg.max_iter)}u
#define SVM_CARRY {CARRY[cfg.carry]}
#define SVM_CARRY_LIMIT {cfg.limit}u
#define SVM_CACHE_LEN {cfg.cache}u   /* kernel values in the SMO row cache */
#define SVM_KERNEL_MEMO {int(cfg.memo)}    /* 1: every dot product of a training once */

#endif
"""


def _weights_c(cfg: SvmConfig, w: np.ndarray | None, b: np.ndarray | None) -> str:
    pairs, d = cfg.pairs, cfg.n_features
    head = ("/* Generated by edgenn: the SVM layer's weights, updated in place by training. */\n"
            "#include <stdint.h>\n\n#include \"edgenn_smo.h\"\n\n")
    if w is None and b is None:
        return (head + f"edgenn_real edgenn_svm_w[{pairs * d}];\n"
                f"edgenn_real edgenn_svm_b[{pairs}];\n"
                f"uint8_t edgenn_svm_active[{pairs}];  /* pairs that vote */\n")
    w32 = np.zeros((pairs, d), np.float32) if w is None else np.asarray(w, np.float32)
    b32 = np.zeros(pairs, np.float32) if b is None else np.asarray(b, np.float32)
    if w32.shape != (pairs, d) or b32.shape != (pairs,):
        raise SvmParameterError(f"initial weights must be w [{pairs}, {d}] and b [{pairs}], "
                                f"got {list(w32.shape)} and {list(b32.shape)}")
    if not (np.isfinite(w32).all() and np.isfinite(b32).all()):
        raise SvmParameterError("initial weights must be finite")
    active = (w32.any(axis=1) | (b32 != 0)).astype(np.uint8)  # as the Python layer decides
    flags_ = "{" + ", ".join(str(int(v)) for v in active) + "}"
    return (head + f"edgenn_real edgenn_svm_w[{pairs * d}] = {_array(w32)};\n\n"
            f"edgenn_real edgenn_svm_b[{pairs}] = {_array(b32)};\n\n"
            f"uint8_t edgenn_svm_active[{pairs}] = {flags_};  /* pairs that vote */\n")


def _io(cfg: SvmConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    in_bytes = cfg.n_features * cfg.element_bytes
    dec_at = (in_bytes + 7) // 8 * 8
    scores_at = dec_at + 4 * cfg.pairs
    label_at = scores_at + 4 * cfg.n_classes
    inputs = [{"name": "features", "offset": 0, "bytes": in_bytes, "shape": [1, cfg.n_features],
               "dtype": cfg.storage}]
    outputs = [
        {"name": "decision", "offset": dec_at, "bytes": 4 * cfg.pairs, "shape": [1, cfg.pairs],
         "dtype": "float32"},
        {"name": "scores", "offset": scores_at, "bytes": 4 * cfg.n_classes,
         "shape": [1, cfg.n_classes], "dtype": "float32"},
        {"name": "label", "offset": label_at, "bytes": 4, "shape": [1], "dtype": "uint32"},
    ]
    return inputs, outputs, label_at + 4


def generate_svm(cfg: SvmConfig, core: Core, out_dir: str | Path, *,
                 w: np.ndarray | None = None, b: np.ndarray | None = None,
                 ram_kb: int | None = None, opt: str = "-O2",
                 stack_bytes: int = DEFAULT_STACK_BYTES,
                 app: Mapping[str, str] | None = None) -> SvmProject:
    """Write the firmware project of ``cfg`` for ``core`` into ``out_dir``.

    ``w`` [n_pairs, d] / ``b`` [n_pairs]: initial weights (default zero: no pair votes until
    trained). ``app``: the application's files (name -> text: startup code, linker.ld, a
    board's console ...) instead of the emulator's (startup.c, edgenn_mark.c, linker.ld).
    Raises PlanError when the static arrays plus the stack do not fit ``ram_kb`` (default:
    the core's RAM).
    """
    ram_kb = core.ram_kb if ram_kb is None else int(ram_kb)
    cfg = cfg.for_ram(ram_kb * 1024, stack_bytes)
    parts = cfg.static_bytes()
    need = cfg.ram_bytes(stack_bytes)
    if need > ram_kb * 1024:
        big = ", ".join(f"{k} {v:,}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])[:3])
        hint = "storage='int8' (a 4x smaller buffer), " if cfg.storage == "float32" else ""
        raise PlanError(f"SVM layer of {cfg.capacity} x {cfg.n_features} {cfg.storage} samples "
                        f"and {cfg.n_classes} classes needs ~{need:,} bytes of RAM ({big}, ...) "
                        f"but {core.name} has {ram_kb} KiB: use {hint}a smaller capacity, fewer "
                        "features or a smaller cache_len, or a device with more RAM (ram_kb)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in (*SVM_SOURCES, *SVM_HEADERS):
        shutil.copyfile(SVM_C_DIR / name, out / name)
    shutil.copyfile(HARNESS, out / HARNESS.name)
    if app is None:
        app = {"startup.c": templates.STARTUP_C, "edgenn_mark.c": templates.EDGENN_MARK_C,
               "linker.ld": templates.linker_script(core, ram_kb, stack_bytes)}
    sources = [HARNESS.name, "svm_weights.c", *SVM_SOURCES,
               *(f for f in app if f.endswith(".c"))]
    cflags, ldflags = flags(core, opt)
    cflags = [*cflags, *EXTRA_CFLAGS]
    # why: the host calls these directly; --gc-sections would drop what main does not call
    ldflags = [*ldflags, *(f"-Wl,--undefined={f}" for f in ENTRY_POINTS)]
    inputs, outputs, arena = _io(cfg)
    manifest = {
        "core": core.name, "elf": "build/model.elf", "arena_symbol": "edgenn_arena",
        "arena_bytes": arena, "invoke_symbol": "edgenn_invoke", "mark_symbol": "edgenn_mark",
        "main_symbol": "main", "stack_bytes": stack_bytes, "ram_kb": ram_kb, "opt": opt,
        "inputs": inputs, "outputs": outputs, "layers": [],
        "svm": {**asdict(cfg), "carry_limit": cfg.limit, "cache_len": cfg.cache,
                "kernel_memo": cfg.memo,
                "pairs": cfg.pairs, "static_bytes": parts,
                "functions": {"append": "edgenn_svm_append_input",
                              "train": "edgenn_svm_train_buffer", "count": "edgenn_svm_count",
                              "predict": "edgenn_invoke"}},
    }
    files = {
        "svm_config.h": _config_h(cfg),
        "svm_weights.c": _weights_c(cfg, w, b),
        **app,
        "Makefile": templates.makefile(cflags, ldflags, sources),
        "manifest.json": json.dumps(manifest, indent=1) + "\n",
    }
    for name, text in files.items():
        atomic_write_bytes(out / name, text.encode())
    return SvmProject(out, core, cfg, sources, cflags, ldflags, manifest)
