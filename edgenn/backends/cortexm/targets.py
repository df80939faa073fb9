"""The Cortex-M cores edgenn generates code for."""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.errors import EdgennError


@dataclass(frozen=True)
class Core:
    """One core: compiler flags, features, emulator model and default memory sizes."""

    name: str
    cflags: tuple[str, ...]
    has_dsp: bool  # ARMv7E-M DSP extension: SMLAD, SXTB16, ... (arm_acle.h __smlad etc.)
    has_fpu: bool
    unicorn_cpu: str  # name of the unicorn UC_CPU_ARM_* constant
    cycle_model: bool  # True only where the Cortex-M4 cycle model (docs/cycle_model.md) applies
    flash_kb: int
    ram_kb: int


CORES: dict[str, Core] = {
    "cortex-m4": Core(
        "cortex-m4",
        ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"),
        has_dsp=True, has_fpu=True, unicorn_cpu="UC_CPU_ARM_CORTEX_M4", cycle_model=True,
        flash_kb=1024, ram_kb=256,  # nRF52840 (Arduino Nano 33 BLE)
    ),
    "cortex-m7": Core(
        "cortex-m7",
        # why single precision: unicorn's M7 faults on double-precision VFP instructions;
        # doubles (bit-exact dequantize) then go through libgcc's IEEE soft-float instead
        ("-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"),
        has_dsp=True, has_fpu=True, unicorn_cpu="UC_CPU_ARM_CORTEX_M7", cycle_model=False,
        flash_kb=2048, ram_kb=512,
    ),
    "cortex-m0plus": Core(
        "cortex-m0plus",
        ("-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft"),
        has_dsp=False, has_fpu=False, unicorn_cpu="UC_CPU_ARM_CORTEX_M0", cycle_model=False,
        flash_kb=256, ram_kb=32,
    ),
}


def get_core(name: str) -> Core:
    try:
        return CORES[name]
    except KeyError:
        raise EdgennError(f"unknown core {name!r} (known: {', '.join(CORES)})") from None
