"""``startup.c`` and ``linker.ld`` of a board's example application: vector table, reset
handler, fault reporting, and the board's memory map with the input staging area."""

from __future__ import annotations

from edgenn.backends.cortexm.boards.board import Board
from edgenn.backends.cortexm.codegen.linker import linker_script as generic_linker_script
from edgenn.errors import EdgennError

# The host writes the staged inputs here (qemu.py: -device loader) and main.c reads them.
STAGE_START = "app_stage_start"
STAGE_END = "app_stage_end"

STARTUP_C = """\
/* Vector table, reset handler and fault reporting of the example application. */
#include <stdint.h>

#include "console.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);
void Reset_Handler(void);
void Fault_Handler(void);
void app_fault(const uint32_t *frame);

typedef void (*app_vector_t)(void);

/* Only the 16 system exceptions: the application enables no interrupt. */
__attribute__((section(".isr_vector"), used))
const app_vector_t app_vectors[16] = {
    (app_vector_t)(uintptr_t)&_estack, /* initial stack pointer */
    Reset_Handler,
    Fault_Handler, /* NMI */
    Fault_Handler, /* HardFault */
    Fault_Handler, /* MemManage */
    Fault_Handler, /* BusFault */
    Fault_Handler, /* UsageFault */
    0, 0, 0, 0,
    Fault_Handler, /* SVCall */
    Fault_Handler, /* DebugMonitor */
    0,
    Fault_Handler, /* PendSV */
    Fault_Handler, /* SysTick */
};

#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define SCB_CFSR (*(volatile uint32_t *)0xE000ED28u)
#define SCB_HFSR (*(volatile uint32_t *)0xE000ED2Cu)
#define SCB_MMFAR (*(volatile uint32_t *)0xE000ED34u)
#define SCB_BFAR (*(volatile uint32_t *)0xE000ED38u)

void Reset_Handler(void)
{
    /* why: the table is linked at the start of flash, which on some chips is only aliased
     * at address 0 (where the core fetched it from) */
    SCB_VTOR = (uint32_t)(uintptr_t)app_vectors;
#if defined(__ARM_FP)
    /* CPACR: full access to CP10 and CP11 before any floating-point instruction */
    SCB_CPACR |= 0xFu << 20;
    __asm__ volatile("dsb\\n\\tisb" ::: "memory");
#endif
    uint32_t *src = &_sidata;
    for (uint32_t *dst = &_sdata; dst < &_edata;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = &_sbss; dst < &_ebss;) {
        *dst++ = 0u;
    }
    app_exit(main());
}

/* Passes the stacked exception frame (MSP or PSP, as EXC_RETURN says) to app_fault. */
__attribute__((naked)) void Fault_Handler(void)
{
    __asm__ volatile(
        "tst lr, #4\\n\\t"
        "ite eq\\n\\t"
        "mrseq r0, msp\\n\\t"
        "mrsne r0, psp\\n\\t"
        "b app_fault\\n\\t");
}

static const char *exception_name(uint32_t number)
{
    switch (number) {
    case 2u: return "NMI";
    case 3u: return "HardFault";
    case 4u: return "MemManage";
    case 5u: return "BusFault";
    case 6u: return "UsageFault";
    case 11u: return "SVCall";
    case 12u: return "DebugMonitor";
    case 14u: return "PendSV";
    case 15u: return "SysTick";
    default: return "exception";
    }
}

/* One console line naming the exception, the faulting pc and the fault status registers,
 * then the run ends with exit status 3. */
__attribute__((used)) void app_fault(const uint32_t *frame)
{
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    app_puts("\\n@edgenn fault ");
    app_puts(exception_name(ipsr & 0x1FFu));
    app_puts(" pc=");
    app_put_hex32(frame[6]);
    app_puts(" lr=");
    app_put_hex32(frame[5]);
    app_puts(" cfsr=");
    app_put_hex32(SCB_CFSR);
    app_puts(" hfsr=");
    app_put_hex32(SCB_HFSR);
    app_puts(" bfar=");
    app_put_hex32(SCB_BFAR);
    app_puts(" mmfar=");
    app_put_hex32(SCB_MMFAR);
    app_putc('\\n');
    app_exit(3);
}
"""


def linker_script(board: Board, stack_bytes: int) -> str:
    """``board``'s memory map: code and constants in FLASH, data, bss and the stack (at the
    top) in RAM; the rest of FLASH after the image is the input staging area."""
    if board.flash_bytes is None or board.ram_bytes is None:
        raise EdgennError(f"board {board.name!r} has no memory map for an example application")
    if stack_bytes <= 0 or stack_bytes % 8:
        raise EdgennError(f"stack of {stack_bytes} bytes: must be a positive multiple of 8")
    stage = f"""
    /* The host stages the inputs in the flash left after the image (see main.c). */
    {STAGE_START} = ALIGN(LOADADDR(.data) + SIZEOF(.data), 16);
    {STAGE_END} = ORIGIN(FLASH) + LENGTH(FLASH);
    ASSERT({STAGE_START} + 16 <= {STAGE_END}, "FLASH overflow: no room left to stage inputs")
"""
    return generic_linker_script(f"{board.name} ({board.description})", board.flash_origin,
                                 board.flash_bytes // 1024, board.ram_origin,
                                 board.ram_bytes // 1024, stack_bytes, bss_at_ram=True,
                                 tail=stage)
