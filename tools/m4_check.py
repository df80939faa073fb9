"""Developer check: a .tflite on the emulated Cortex-M4 against TFLite Micro, with per-layer cycles.

    .venv/bin/python tools/m4_check.py MODEL.tflite [--n 20] [--compact]

Prints one line per layer (kernel, MACs, cycles, MAC/cycle), the total, arena and flash, and
the number of output elements that differ from TFLite Micro's Python interpreter on N random
inputs (0 is the only acceptable number). Exit code 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from edgenn.backends.cortexm.executable import compile_cortexm
from edgenn.frontends.tflite import load_tflite
from edgenn.oracles.tflm import tflm_run


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--compact", action="store_true", default=None,
                    help="compact generated code everywhere (default: the flash budget "
                         "decides, as in edgenn compile)")
    args = ap.parse_args()
    data = Path(args.model).read_bytes()
    graph = load_tflite(data, Path(args.model).name)
    exe = compile_cortexm(graph, "cortex-m4", compact=args.compact)
    name = graph.inputs[0]
    t = graph.tensor(name)
    shape = (args.n, *graph.external_shape(name)[1:])
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, size=shape, dtype=np.int8) if t.dtype.numpy == np.int8 else \
        rng.random(shape, dtype=np.float32)
    bench = exe.bench(x[:1])
    for layer in bench.layers:
        rate = f"{layer.macs / layer.cycles:.3f}" if layer.cycles and layer.macs else ""
        print(f"{layer.index:3d} {layer.op:15s} {layer.kernel:24s} {layer.macs:>10,} "
              f"{layer.cycles or 0:>11,} {rate}")
    total_macs = sum(layer.macs for layer in bench.layers)
    print(f"total {bench.total_cycles:,} cycles, {total_macs / (bench.total_cycles or 1):.3f} "
          f"MAC/cycle, arena {bench.arena_bytes:,} B, flash {bench.flash_bytes:,} B")
    ours = exe.run(x)[0]
    ref = np.stack([tflm_run(data, x[i:i + 1])[0][0] for i in range(args.n)])
    bad = int(np.count_nonzero(ours.reshape(ref.shape) != ref))
    print(f"mismatches vs TFLite Micro on {args.n} random inputs: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
