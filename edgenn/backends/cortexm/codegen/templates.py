"""The emulator's application around a model library (``--board generic``): startup code,
main, the layer hook ``edgenn_mark``, linker script."""

from __future__ import annotations

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


def harness_main(name: str, static_arena: bool, skip_capable: bool = False) -> str:
    """``main.c`` of the emulator's application (``--board generic``).

    The emulator boots to ``main``, calls ``edgenn_harness_init`` once and then
    ``NAME_invoke`` itself for every inference, reading the arena in between; on a real
    device ``main`` runs the model forever.
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
    return f"""\
/* The emulator's application for {name}: init once, then invoke for ever. */
#include "{name}.h"

int edgenn_harness_init(void) __attribute__((used, noinline));

{arena}int edgenn_harness_init(void)
{{
    return {init};
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


def linker_script(core: Core, ram_kb: int, stack_bytes: int) -> str:
    """FLASH at 0, RAM at 0x20000000; the stack at the top of RAM (_sstack.._estack)."""
    return f"""\
/* {core.name}: {core.flash_kb} KiB flash, {ram_kb} KiB RAM, {stack_bytes} B stack */
MEMORY
{{
    FLASH (rx)  : ORIGIN = 0x00000000, LENGTH = {core.flash_kb}K
    RAM   (rwx) : ORIGIN = 0x20000000, LENGTH = {ram_kb}K
}}

ENTRY(Reset_Handler)
_stack_size = {stack_bytes};

SECTIONS
{{
    .text :
    {{
        KEEP(*(.isr_vector))
        *(.text*)
        *(.glue_7) *(.glue_7t)
        KEEP(*(.init)) KEEP(*(.fini))
        . = ALIGN(4);
    }} > FLASH

    .rodata :
    {{
        . = ALIGN(4);
        *(.rodata*)
        . = ALIGN(4);
    }} > FLASH

    .ARM.extab : {{ *(.ARM.extab* .gnu.linkonce.armextab.*) }} > FLASH
    .ARM.exidx : {{ *(.ARM.exidx* .gnu.linkonce.armexidx.*) }} > FLASH

    _sidata = LOADADDR(.data);
    .data :
    {{
        . = ALIGN(4);
        _sdata = .;
        *(.data*)
        . = ALIGN(4);
        _edata = .;
    }} > RAM AT > FLASH

    .bss (NOLOAD) :
    {{
        . = ALIGN(4);
        _sbss = .;
        *(.bss*)
        *(COMMON)
        . = ALIGN(4);
        _ebss = .;
    }} > RAM

    _estack = ORIGIN(RAM) + LENGTH(RAM);
    _sstack = _estack - _stack_size;
    ASSERT(_ebss <= _sstack, "RAM overflow: .data + .bss + stack do not fit the RAM")
}}
"""


def makefile(cflags: list[str], ldflags: list[str], sources: list[str]) -> str:
    """A plain firmware Makefile (one ELF from ``sources``), for projects that are not a
    model library (the SVM trainer's firmware)."""
    srcs = " \\\n       ".join(sources)
    return f"""\
# Generated by edgenn. `make` builds model.elf with Debian's arm-none-eabi-gcc and newlib.
CC      = arm-none-eabi-gcc
CFLAGS  = {' '.join(cflags)}
LDFLAGS = {' '.join(ldflags)}
SRCS    = {srcs}
OBJS    = $(SRCS:.c=.o)

model.elf: $(OBJS) linker.ld
\t$(CC) $(LDFLAGS) $(OBJS) -o $@ -lm

%.o: %.c
\t$(CC) $(CFLAGS) -c $< -o $@

clean:
\trm -f $(OBJS) model.elf model.map

.PHONY: clean
"""
