"""Run Cortex-M firmware in unicorn with the project's Cortex-M4 cycle model.

``Machine(elf, manifest, core).invoke(inputs)`` is the entry point; ``run_snippet`` runs a bare
code sequence through the same counting path; ``Firmware(elf).run()`` boots a foreign bare-metal
ELF (e.g. a TFLite Micro build) to its breakpoint, counted the same way. unicorn, capstone and
pyelftools are imported on first use (a missing one is a one-line EdgennError).
"""

from edgenn.backends.cortexm.emulator.faults import EmulatorFault
from edgenn.backends.cortexm.emulator.firmware import Firmware, FirmwareRun
from edgenn.backends.cortexm.emulator.machine import CallResult, InvokeResult, Machine
from edgenn.backends.cortexm.emulator.snippet import run_snippet

__all__ = ["CallResult", "EmulatorFault", "Firmware", "FirmwareRun", "InvokeResult", "Machine",
           "run_snippet"]
