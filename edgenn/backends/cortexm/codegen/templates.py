"""The emulator's application around a model library (``--board generic``): startup code,
main, the layer hook ``edgenn_mark``, linker script."""

from __future__ import annotations

from collections.abc import Sequence

from edgenn.backends.cortexm.codegen import linker
from edgenn.backends.cortexm.targets import Core

EDGENN_MARK_C = """\
/* Layer boundary marker: edgenn_invoke calls edgenn_mark(i) just before layer i and
 * edgenn_mark(n_layers) after the last one. Tools attribute cycles to layers by its address,
 * so it must never be inlined or optimised away. */
#include <stdint.h>

void edgenn_mark(uint32_t layer_index) __attribute__((noinline));

void edgenn_mark(uint32_t layer_index)
{
    (void)layer_index;
    __asm__ volatile("" ::: "memory");
}
"""


def harness_main(name: str, static_arena: bool, skip_capable: bool = False,
                 caller_inputs: Sequence[str] = ()) -> str:
    """``main.c`` of the emulator's application (``--board generic``).

    The emulator boots to ``main``, calls ``edgenn_harness_init`` once and then
    ``NAME_invoke`` itself for every inference, reading the arena in between; on a real
    device ``main`` runs the model forever. ``caller_inputs``: the RAM buffers (outside the
    arena) of a library that reads its inputs from the caller's buffers, one per input in
    order; init binds them (``NAME_set_input``) and the emulator writes the inputs there.
    """
    m = name.upper()
    if static_arena:
        arena, init = "", f"{name}_init()"
    else:
        arena = (f"uint8_t edgenn_harness_arena[{m}_ARENA_BYTES] "
                 f"__attribute__((aligned({m}_ARENA_ALIGNMENT)));\n\n")
        init = f"{name}_init_with_arena(edgenn_harness_arena, sizeof edgenn_harness_arena)"
    if skip_capable:  # why: keeps the mask setter, which the emulator calls, in the image
        init = f"({name}_set_skip_mask(0u), {init})"
    body = f"    return {init};"
    for k, symbol in enumerate(caller_inputs):
        arena += (f"/* input {k}: the caller's buffer, outside the arena */\n"
                  f"uint8_t {symbol}[{m}_INPUT{k}_BYTES] "
                  f"__attribute__((aligned({m}_INPUT_ALIGNMENT)));\n\n")
    if caller_inputs:
        binds = "".join(f"    status = {name}_set_input({k}, {symbol});\n"
                        f"    if (status != {m}_OK) {{\n        return status;\n    }}\n"
                        for k, symbol in enumerate(caller_inputs))
        body = (f"    int status = {init};\n    if (status != {m}_OK) {{\n"
                f"        return status;\n    }}\n{binds}    return {m}_OK;")
    return f"""\
/* The emulator's application for {name}: init once, then invoke for ever. */
#include "{name}.h"

int edgenn_harness_init(void) __attribute__((used, noinline));

{arena}int edgenn_harness_init(void)
{{
{body}
}}

int main(void)
{{
    if (edgenn_harness_init() != {m}_OK) {{
        for (;;) {{
        }}
    }}
    for (;;) {{
        (void){name}_invoke();
    }}
}}
"""


STARTUP_C = """\
/* Vector table and reset handler: copy .data, zero .bss, enable the FPU if any, call main. */
#include <stdint.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);
void Reset_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);

typedef void (*edgenn_vector_t)(void);

__attribute__((section(".isr_vector"), used))
const edgenn_vector_t edgenn_vectors[16] = {
    (edgenn_vector_t)(uintptr_t)&_estack, /* initial stack pointer */
    Reset_Handler,
    Default_Handler,   /* NMI */
    HardFault_Handler,
    Default_Handler,   /* MemManage */
    Default_Handler,   /* BusFault */
    Default_Handler,   /* UsageFault */
    0, 0, 0, 0,
    Default_Handler,   /* SVCall */
    Default_Handler,   /* DebugMonitor */
    0,
    Default_Handler,   /* PendSV */
    Default_Handler,   /* SysTick */
};

void Reset_Handler(void)
{
#if defined(__ARM_FP)
    /* CPACR: full access to CP10 and CP11 before any floating-point instruction */
    *(volatile uint32_t *)0xE000ED88u |= (0xFu << 20);
    __asm__ volatile("dsb\\n\\tisb" ::: "memory");
#endif
    uint32_t *src = &_sidata;
    for (uint32_t *dst = &_sdata; dst < &_edata;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = &_sbss; dst < &_ebss;) {
        *dst++ = 0u;
    }
    main();
    for (;;) {
    }
}

void HardFault_Handler(void)
{
    for (;;) {
    }
}

void Default_Handler(void)
{
    for (;;) {
    }
}
"""


def linker_script(core: Core, ram_kb: int, stack_bytes: int,
                  flash_kb: float | None = None) -> str:
    """FLASH at 0 (``flash_kb`` KiB, default the core's), RAM at 0x20000000; the stack at the
    top of RAM (_sstack.._estack)."""
    return linker.linker_script(core.name, 0x0000_0000,
                                core.flash_kb if flash_kb is None else flash_kb,
                                0x2000_0000, ram_kb, stack_bytes)


def makefile(cflags: list[str], ldflags: list[str], sources: list[str]) -> str:
    """A plain firmware Makefile (one ELF from ``sources``), for projects that are not a
    model library (the SVM trainer's firmware)."""
    srcs = " \\\n       ".join(sources)
    return f"""\
# Generated by edgenn. `make` builds build/model.elf with Debian's arm-none-eabi-gcc and newlib
# (objects and the map in build/ too).
CC      = arm-none-eabi-gcc
CFLAGS  = {' '.join(cflags)}
LDFLAGS = {' '.join(ldflags)}
SRCS    = {srcs}
OBJS    = $(SRCS:%.c=build/%.o)

build/model.elf: $(OBJS) linker.ld
\t$(CC) $(LDFLAGS) $(OBJS) -o $@ -lm

build/%.o: %.c
\t@mkdir -p $(@D)
\t$(CC) $(CFLAGS) -c $< -o $@

clean:
\trm -f $(OBJS) build/model.elf build/model.map

.PHONY: clean
"""
