"""benchmarks/mlperf_tiny.py on the small MLPerf Tiny AD model, the foreign-firmware runner, and
per-layer flash attribution.

The shared model and baseline folders live outside the repository (../shared); the tests are
skipped where they are missing.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "models" / "mlperf_tiny"
BASELINES = ROOT.parent / "shared" / "baselines" / "tflm_cmsis_nn_m4"
AD = MODELS / "ad01_int8.tflite"
AD_ELF = BASELINES / "ad01_int8.elf"
# The figure recorded with the baseline ELF (its README). Our emulator measures 743,360 for the
# same ELF: 60 cycles (0.008 %) more. On AD the 60 are exactly the address-generation stalls our
# model charges when SP, just written (`add sp, #n`), is the base of a POP / LDRD, but that count
# does not explain the (also < 0.01 %) differences on the other three models, so the cause is not
# settled (docs/cortexm.md, MLPerf Tiny). Until it is, the check allows 0.01 %.
AD_README_CYCLES = 743_300
README_TOLERANCE = 1e-4

needs_shared = pytest.mark.skipif(not (AD.is_file() and AD_ELF.is_file()),
                                  reason="../shared MLPerf Tiny models / baselines not present")


def _bench_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mlperf_tiny_bench",
                                                  ROOT / "benchmarks" / "mlperf_tiny.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _bench_module()


@pytest.fixture(scope="module")
def ad_doc(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("mlperf")
    (folder / AD.name).symlink_to(AD)
    out = folder / "mlperf.json"
    png = folder / "mlperf.png"
    pytest.importorskip("tflite_micro")
    code = bench.main([str(folder), "--n", "3", "--json", str(out), "--plot", str(png)])
    assert code == 0  # 0 mismatches
    assert png.stat().st_size > 1000
    return json.loads(out.read_text())


@needs_shared
def test_tflm_firmware_cycles_match_its_readme() -> None:
    """Our emulator on the TFLite Micro + CMSIS-NN ELF against the figure recorded with it."""
    from edgenn.backends.cortexm.emulator import Firmware

    fw = Firmware(AD_ELF)
    run = fw.run()
    assert run.breakpoint == 0 and fw.read_word("status") == 0
    cycles = run.cycles_between(0, 1)
    assert abs(cycles - AD_README_CYCLES) <= README_TOLERANCE * AD_README_CYCLES, cycles
    assert fw.read_word("arena_used") == 2_580  # the README's arena_used figure
    assert fw.sizes()["flash_bytes"] == 444_708  # the README's text + data figure
    assert len(fw.image_bytes("g_inputs")) >= 640


@needs_shared
def test_benchmark_json_on_ad(ad_doc: dict, bench: ModuleType) -> None:
    assert ad_doc["benchmark"] == "mlperf_tiny" and ad_doc["clock_hz"] == 64e6
    (m,) = ad_doc["models"]
    assert m["model"] == "ad01_int8" and m["task"] == "AD"
    for key in ("macs", "cycles", "ms", "macs_per_cycle", "arena_bytes", "flash_bytes",
                "int8_param_bytes", "mismatches", "tflm", "published", "targets", "layers",
                "tflm_arena_bytes", "flash_breakdown", "embedded_input"):
        assert key in m, key
    assert m["mismatches"] == 0
    assert m["macs"] == 264_192 and m["int8_param_bytes"] > 264_192
    assert m["embedded_input"] == {"edgenn_vs_tflm_python": 0, "tflm_elf_vs_tflm_python": 0,
                                   "edgenn_vs_tflm_elf": 0}
    t = m["tflm"]
    assert abs(t["cycles"] - AD_README_CYCLES) <= README_TOLERANCE * AD_README_CYCLES
    assert t["readme_cycles"] == AD_README_CYCLES and t["flash_bytes"] == 444_708
    assert m["tflm_arena_bytes"] == 2_580
    assert t["speedup"] == pytest.approx(t["cycles"] / m["cycles"])
    assert m["published"]["cycles"] == 486_000 and m["published"]["real_board"]
    g = m["targets"]
    assert g["cycles"] == pytest.approx(486_000 / 1.3)
    assert g["cycles_met"] == (m["cycles"] <= g["cycles"])
    assert g["flash_limit"] == m["int8_param_bytes"] + 48 * 1024
    assert g["arena_met"] == (m["arena_bytes"] <= 2_580)
    # per layer: cycles add up to at most the total, flash to at most the firmware's flash
    layers = m["layers"]
    assert len(layers) == 10 and all(layer["op"] == "FullyConnected" for layer in layers)
    assert sum(layer["cycles"] for layer in layers) <= m["cycles"]
    assert sum(layer["macs"] for layer in layers) == m["macs"]
    layer_flash = sum(layer["flash_bytes"] for layer in layers)
    assert 0 < layer_flash <= m["flash_bytes"]
    fb = m["flash_breakdown"]
    assert layer_flash + fb["shared_kernels"] + fb["runtime"] + fb["other"] == m["flash_bytes"]
    # every layer holds at least its int8 weights
    assert all(layer["flash_bytes"] >= layer["macs"] for layer in layers)


@needs_shared
def test_docs_table_between_markers(ad_doc: dict, bench: ModuleType, tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{bench.MARK_START}\nold\n{bench.MARK_END}\noutro\n")
    other = tmp_path / "no_markers.md"
    other.write_text("nothing here\n")
    assert bench.update_docs(ad_doc, (doc, other)) == [doc]
    text = doc.read_text()
    assert text.startswith("intro\n") and text.endswith("outro\n") and "old" not in text
    assert "AD ad01_int8 (0.26 M)" in text and "486,000 (Plumerai, 4.05 ms)" in text
    assert other.read_text() == "nothing here\n"
    assert bench.update_docs(ad_doc, (doc,)) == []  # idempotent


def test_per_layer_flash_in_bench(tmp_path: Path) -> None:
    """LayerBench.flash_bytes from the l<i>_ symbols; shared kernels are counted once."""
    from edgenn.backends.cortexm.executable import LayerBench, compile_cortexm
    from edgenn.frontends.tflite import load_tflite

    fixture = ROOT / "tests" / "fixtures" / "tflite" / "model_c_int8.tflite"
    graph = load_tflite(fixture.read_bytes(), name="model_c")
    exe = compile_cortexm(graph, "cortex-m4")
    x = np.zeros((1, *graph.external_shape(graph.inputs[0])[1:]), np.int8)
    result = exe.emulate(x)
    fmap = exe.flash_map()
    assert [layer.flash_bytes for layer in result.layers] == fmap.layers
    assert all(f > 0 for f in fmap.layers)  # each conv has its own weights
    assert sum(fmap.layers) + fmap.shared_kernels + fmap.runtime + fmap.other == \
        result.flash_bytes == fmap.total
    assert fmap.shared_kernels > 0 and fmap.runtime > 0 and fmap.other >= 0
    assert asdict(result)["layers"][0]["flash_bytes"] == fmap.layers[0]
    assert result.flash_breakdown["shared_kernels"] == fmap.shared_kernels
    # the old positional constructor still works
    assert LayerBench(0, "a", "Conv2D", "k", 1, 2, 3).flash_bytes == 0


def test_compile_prints_layer_flash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from edgenn.cli.main import main

    fixture = ROOT / "tests" / "fixtures" / "tflite" / "model_c_int8.tflite"
    assert main(["compile", str(fixture), "--target", "cortex-m4", "-o",
                 str(tmp_path / "fw")]) == 0
    out = capsys.readouterr().out
    assert "flash per layer" in out and "shared kernels" in out


FOREIGN_C = r"""
#include <stdint.h>
extern uint32_t _estack;
volatile uint32_t result;
const uint8_t g_data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
__attribute__((noinline)) void mark(uint32_t i) { __asm volatile("" :: "r"(i)); }
void Reset_Handler(void) {
    uint32_t acc = 0;
    mark(0);
    for (volatile uint32_t k = 0; k < 100; k++) acc += g_data[k & 7];
    mark(1);
    result = acc;
    __asm volatile("bkpt #5");
    for (;;) {}
}
__attribute__((section(".vectors"), used)) const void *vectors[2] = {&_estack, Reset_Handler};
"""
FOREIGN_LD = """
MEMORY { FLASH (rx) : ORIGIN = 0, LENGTH = 64K  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 16K }
SECTIONS {
  .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) } > FLASH
  .bss (NOLOAD) : { *(.bss*) *(COMMON) } > RAM
  _estack = ORIGIN(RAM) + LENGTH(RAM);
}
"""


def test_foreign_firmware_runner(tmp_path: Path) -> None:
    """A bare-metal ELF edgenn did not build: booted from its vector table, marks recorded,
    stopped on BKPT, results read back; the cycles between the marks are deterministic."""
    import shutil
    import subprocess

    from edgenn.backends.cortexm.emulator import Firmware

    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        pytest.skip("arm-none-eabi-gcc not installed")
    (tmp_path / "fw.c").write_text(FOREIGN_C)
    (tmp_path / "fw.ld").write_text(FOREIGN_LD)
    elf = tmp_path / "fw.elf"
    subprocess.run([gcc, "-mcpu=cortex-m4", "-mthumb", "-O2", "-nostdlib", "-ffreestanding",
                    "-T", str(tmp_path / "fw.ld"), str(tmp_path / "fw.c"), "-o", str(elf)],
                   check=True)
    runs = []
    for _ in range(2):
        fw = Firmware(elf)
        run = fw.run()
        assert run.breakpoint == 5
        assert [m[0] for m in run.marks] == [0, 1]
        assert fw.read_word("result") == sum((k & 7) + 1 for k in range(100))
        assert fw.image_bytes("g_data") == bytes(range(1, 9))
        runs.append(run.cycles_between(0, 1))
        assert 0 < run.instructions_between(0, 1) <= run.instructions
    assert runs[0] == runs[1] > 100
    with pytest.raises(Exception, match="runs once"):
        fw.run()
