"""Cycles of the Cortex-M4 DSP conv kernel on the layer shapes of models A, B, C vs CMSIS-NN.

Each layer runs the real Thumb-2 build of ``c/edgenn_conv_s8_dsp.c`` (arm-none-eabi-gcc) in unicorn,
priced by the project's Cortex-M4 cycle model (docs/cycle_model.md, zero wait
states; flash wait states, caches and bus contention ignored) through the emulator's
``BlockCounter``; outputs are checked against the reference runtime. Random int8 weights,
ReLU. Prints cycles, MAC/cycle and CMSIS-NN's cycles for the same layer, and writes
benchmarks/results/cortexm_conv_kernels.json.

    .venv/bin/python benchmarks/cortexm_conv_kernels.py [--opt -O2]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgenn.backends.cortexm.emulator.counter import BlockCounter
from edgenn.backends.cortexm.emulator.elf import ElfImage
from edgenn.backends.cortexm.kernels.conv import conv_params
from edgenn.backends.cortexm.kernels.conv_dsp import (
    call_args,
    fast_mode,
    pack_weights,
    quant_records,
)
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.cc.driver import run_tool
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
C_DIR = ROOT / "edgenn" / "backends" / "cortexm" / "c"
RAM = 0x20000000
RAM_SIZE = 256 * 1024

# model, layer, (h, w, cin), cout, pads, CMSIS-NN cycles (docs/cycle_model.md)
LAYERS = [
    ("A", "conv1", (28, 28, 1), 16, (0, 0, 0, 0), 1_360_206),
    ("A", "conv2", (26, 26, 16), 32, (0, 0, 0, 0), 6_909_650),
    ("B", "conv1", (28, 28, 1), 32, (0, 0, 0, 0), 2_187_630),
    ("B", "conv2", (26, 26, 32), 32, (0, 0, 0, 0), 12_383_954),
    ("C", "conv1", (28, 28, 1), 8, (1, 1, 1, 1), 1_095_096),
    ("C", "conv2", (28, 28, 8), 16, (1, 1, 1, 1), 3_265_055),
]

_BENCH_C = r"""
#include <stdint.h>
#include "edgenn_conv_s8_dsp.h"
int8_t g_in[32768] __attribute__((aligned(4)));
int8_t g_out[32768] __attribute__((aligned(4)));
uint32_t g_w[8192];
int32_t g_quant[256];
volatile int32_t g_p[17];
uint32_t g_scratch[4096];
void bench_halt(void) { for (;;) { __asm__ volatile("nop"); } }
void bench_run(void)
{
    edgenn_conv_s8_dsp(g_in, g_out, g_scratch, g_w, g_quant, g_p[0], g_p[1], g_p[2], g_p[3],
                       g_p[4], g_p[5], g_p[6], g_p[7], g_p[8], g_p[9], g_p[10], g_p[11],
                       g_p[12], g_p[13], g_p[14], g_p[15], g_p[16]);
}
"""

_LINKER = """
MEMORY { FLASH (rx) : ORIGIN = 0x00000000, LENGTH = 1024K
         RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 256K }
SECTIONS {
  .text : { . = 0x400; *(.text*) *(.rodata*) } > FLASH
  .data : { *(.data*) } > RAM AT > FLASH
  .bss (NOLOAD) : { *(.bss*) *(COMMON) } > RAM
}
"""


def build_firmware(out_dir: Path, opt: str = "-O2") -> Path:
    """bench_run() around edgenn_conv_s8_dsp, built for the Cortex-M4."""
    (out_dir / "bench.c").write_text(_BENCH_C)
    (out_dir / "link.ld").write_text(_LINKER)
    elf = out_dir / "bench.elf"
    cmd = ["arm-none-eabi-gcc", *get_core("cortex-m4").cflags, opt, "-Wall", "-Wextra",
           "-Werror", "-nostartfiles", "--specs=nano.specs", f"-I{C_DIR}",
           "-T", str(out_dir / "link.ld"), "-Wl,--entry=bench_run",
           str(out_dir / "bench.c"), str(C_DIR / "edgenn_conv_s8_dsp.c"), "-o", str(elf)]
    run_tool(cmd, "building the conv benchmark firmware")
    return elf


@dataclass
class Bench:
    """A loaded firmware: run one conv layer, get its output and its cycles."""

    elf_path: Path

    def __post_init__(self) -> None:
        import unicorn
        from unicorn import arm_const

        self.elf = ElfImage(self.elf_path)
        uc = unicorn.Uc(unicorn.UC_ARCH_ARM, unicorn.UC_MODE_THUMB | unicorn.UC_MODE_MCLASS)
        uc.ctl_set_cpu_model(unicorn.arm_const.UC_CPU_ARM_CORTEX_M4)
        uc.mem_map(0, 1024 * 1024)
        uc.mem_map(RAM, RAM_SIZE)
        for seg in self.elf.segments:
            uc.mem_write(seg.paddr, seg.data)
        self.uc, self.arm = uc, arm_const
        self.counter = BlockCounter(uc, arm_const, {}, 10**9)

    def _put(self, name: str, arr: np.ndarray) -> None:
        self.uc.mem_write(self.elf.symbol(name), np.ascontiguousarray(arr).tobytes())

    def run(self, graph: Graph, x: np.ndarray,
            fast: int | None = None) -> tuple[np.ndarray, int, int]:
        """(output [1,H,W,C], cycles, instructions) of the graph's Conv2D on input x."""
        p = conv_params(graph.nodes[0], graph)
        fast = fast_mode(p) if fast is None else fast
        self._put("g_in", x.astype(np.int8))
        self._put("g_w", pack_weights(p.w, 2 if fast else 1))
        self._put("g_quant", quant_records(p, fast))
        self._put("g_p", np.array(call_args(p, fast), np.int32))
        halt = self.elf.symbol("bench_halt")
        self.uc.reg_write(self.arm.UC_ARM_REG_SP, RAM + RAM_SIZE)
        self.uc.reg_write(self.arm.UC_ARM_REG_LR, halt | 1)
        self.counter.start()
        self.uc.emu_start(self.elf.symbol("bench_run") | 1, halt)
        stats = self.counter.finish(halt)
        n = p.out_h * p.out_w * p.out_c
        out = np.frombuffer(bytes(self.uc.mem_read(self.elf.symbol("g_out"), n)), np.int8)
        return out.reshape(1, p.out_h, p.out_w, p.out_c), stats.cycles, stats.instructions


def conv_graph(rng: np.random.Generator, hwc: tuple[int, int, int], cout: int,
               pads: tuple[int, int, int, int], k: tuple[int, int] = (3, 3),
               strides: tuple[int, int] = (1, 1)) -> Graph:
    """A one-Conv2D int8 ReLU graph with random weights, per-channel scales and bias."""
    h, w_, cin = hwc
    w = rng.integers(-127, 128, size=(cout, *k, cin)).astype(np.int8)
    b = rng.integers(-20000, 20000, size=cout).astype(np.int32)
    ws = rng.uniform(0.002, 0.02, size=cout).astype(np.float32)
    x = Tensor("x", (1, h, w_, cin), DType.INT8, QuantParams.per_tensor(0.05, -3))
    wt = Tensor("w", w.shape, DType.INT8, QuantParams(ws, np.zeros(cout, np.int64), 0), w)
    bt = Tensor.const("b", b)
    node = Node("conv", "Conv2D", ("x", "w", "b"), ("y",),
                {"strides": strides, "pads": pads, "activation": Activation.RELU})
    ((shape, dtype),) = infer(node, [x, wt, bt])
    out_s = float(np.float32(0.05 * 0.01 * np.sqrt(k[0] * k[1] * cin) * 4))
    y = Tensor("y", shape, dtype, QuantParams.per_tensor(out_s, -128))
    return Graph("g", {t.name: t for t in (x, wt, bt, y)}, (node,), ("x",), ("y",))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opt", default="-O2", help="optimisation flag of the kernel build")
    opts = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(build_firmware(Path(tmp), opts.opt))
        print(f"Cortex-M4 cycle model, zero wait states, {opts.opt}; CMSIS-NN figures from "
              "docs/cycle_model.md")
        print(f"{'layer':9} {'shape':24} {'MACs':>10} {'cycles':>10} {'MAC/cyc':>8} "
              f"{'CMSIS-NN':>10} {'speed-up':>8} exact")
        totals: dict[str, list[int]] = {}
        for model, name, hwc, cout, pads, cmsis in LAYERS:
            g = conv_graph(rng, hwc, cout, pads)
            x = rng.integers(-128, 128, size=(1, *hwc)).astype(np.int8)
            got, cycles, instr = bench.run(g, x)
            exact = bool(np.array_equal(got, compile_ref(g).run(x)[0]))
            oh, ow, oc = got.shape[1:]
            macs = oh * ow * oc * 9 * hwc[2]
            shape = f"{hwc[0]}x{hwc[1]}x{hwc[2]}->{oh}x{ow}x{oc}"
            print(f"{model} {name:7} {shape:24} {macs:>10,} {cycles:>10,} {macs / cycles:>8.3f} "
                  f"{cmsis:>10,} {cmsis / cycles:>7.2f}x {exact}")
            t = totals.setdefault(model, [0, 0, 0])
            t[0] += macs
            t[1] += cycles
            t[2] += cmsis
            rows.append({"model": model, "layer": name, "shape": shape, "macs": macs,
                         "cycles": cycles, "instructions": instr, "cmsis_nn_cycles": cmsis,
                         "bit_exact": exact})
        for model, (macs, cycles, cmsis) in totals.items():
            print(f"{model} total   {'':24} {macs:>10,} {cycles:>10,} {macs / cycles:>8.3f} "
                  f"{cmsis:>10,} {cmsis / cycles:>7.2f}x  (ceiling 2 MAC/cycle: "
                  f"{macs // 2:,})")
    out = ROOT / "benchmarks" / "results" / "cortexm_conv_kernels.json"
    atomic_write_bytes(out, json.dumps(with_version({
        "cycle_model": "cortex-m4 (docs/cycle_model.md)", "opt": opts.opt, "layers": rows}),
        indent=1).encode())
    return 0 if all(r["bit_exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
