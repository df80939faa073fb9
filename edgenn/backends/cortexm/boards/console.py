"""``console.c``/``console.h`` of a board's example application: the polled console UART,
number printing and the semihosting exit (all the application needs from the board)."""

from __future__ import annotations

from edgenn.backends.cortexm.boards.board import Board
from edgenn.errors import EdgennError

BAUD = 115200

CONSOLE_H = """\
/* Console of the example application: a polled UART and the semihosting exit. */
#ifndef APP_CONSOLE_H
#define APP_CONSOLE_H

#include <stdint.h>

void app_console_init(void);
void app_putc(char c);
void app_puts(const char *s);
void app_put_dec(int32_t value);
void app_put_hex32(uint32_t value);
void app_put_hex8(uint8_t value);
/* A little-endian u32 of the staging area (any alignment). */
uint32_t app_read_u32(const uint8_t *p);
/* Prints "@edgenn error <what><value>" and returns status. */
int app_fail(const char *what, int32_t value, int status);
/* Ends the run: semihosting SYS_EXIT_EXTENDED (ADP_Stopped_ApplicationExit, status). */
void app_exit(int status) __attribute__((noreturn));

#endif
"""

# why polled with a wait on "TX full": QEMU's CMSDK UART model drops nothing but holds
# TXFULL while its character back end is busy, as the real UART does while shifting out.
_CMSDK_UART = """\
/* CMSDK APB UART0 (Arm MPS2 FPGA images) */
#define UART_BASE 0x{base:08X}u
#define UART_DATA (*(volatile uint32_t *)(UART_BASE + 0x000u))
#define UART_STATE (*(volatile uint32_t *)(UART_BASE + 0x004u))
#define UART_CTRL (*(volatile uint32_t *)(UART_BASE + 0x008u))
#define UART_BAUDDIV (*(volatile uint32_t *)(UART_BASE + 0x010u))
#define UART_STATE_TXFULL 0x1u
#define UART_CTRL_TXEN 0x1u

void app_console_init(void)
{{
    UART_BAUDDIV = {divisor}u; /* {clock} Hz / {baud} baud */
    UART_CTRL = UART_CTRL_TXEN;
}}

void app_putc(char c)
{{
    while (UART_STATE & UART_STATE_TXFULL) {{
    }}
    UART_DATA = (uint32_t)(uint8_t)c;
}}

static void console_flush(void)
{{
    while (UART_STATE & UART_STATE_TXFULL) {{
    }}
}}
"""

# why the RCC and GPIO writes: on the chip USART1 and port A are clock-gated after reset and
# PA9 must be switched to alternate function 7 (USART1_TX); QEMU ignores these registers.
_STM32_USART = """\
/* STM32F4 USART1 on PA9 (TX) */
#define RCC_AHB1ENR (*(volatile uint32_t *)0x40023830u)
#define RCC_APB2ENR (*(volatile uint32_t *)0x40023844u)
#define GPIOA_MODER (*(volatile uint32_t *)0x40020000u)
#define GPIOA_AFRH (*(volatile uint32_t *)0x40020024u)
#define USART_BASE 0x{base:08X}u
#define USART_SR (*(volatile uint32_t *)(USART_BASE + 0x00u))
#define USART_DR (*(volatile uint32_t *)(USART_BASE + 0x04u))
#define USART_BRR (*(volatile uint32_t *)(USART_BASE + 0x08u))
#define USART_CR1 (*(volatile uint32_t *)(USART_BASE + 0x0Cu))
#define USART_SR_TC (1u << 6)
#define USART_SR_TXE (1u << 7)
#define USART_CR1_TE (1u << 3)
#define USART_CR1_UE (1u << 13)

void app_console_init(void)
{{
    RCC_AHB1ENR |= 1u;        /* GPIOAEN */
    RCC_APB2ENR |= 1u << 4;   /* USART1EN */
    GPIOA_MODER = (GPIOA_MODER & ~(3u << 18)) | (2u << 18);  /* PA9: alternate function */
    GPIOA_AFRH = (GPIOA_AFRH & ~(0xFu << 4)) | (7u << 4);    /* PA9: AF7 = USART1_TX */
    USART_BRR = {divisor}u; /* {clock} Hz / {baud} baud */
    USART_CR1 = USART_CR1_UE | USART_CR1_TE;
}}

void app_putc(char c)
{{
    while (!(USART_SR & USART_SR_TXE)) {{
    }}
    USART_DR = (uint32_t)(uint8_t)c;
}}

static void console_flush(void)
{{
    while (!(USART_SR & USART_SR_TC)) {{
    }}
}}
"""

_UARTS = {"cmsdk-apb": _CMSDK_UART, "stm32-usart": _STM32_USART}

_COMMON = """\
uint32_t app_read_u32(const uint8_t *p)
{
    uint32_t value;
    memcpy(&value, p, sizeof value);
    return value;
}

int app_fail(const char *what, int32_t value, int status)
{
    app_puts("@edgenn error ");
    app_puts(what);
    app_put_dec(value);
    app_putc('\\n');
    return status;
}

void app_puts(const char *s)
{
    while (*s != '\\0') {
        app_putc(*s++);
    }
}

void app_put_dec(int32_t value)
{
    char digits[11];
    int n = 0;
    /* why via uint32_t: -INT32_MIN overflows int32_t */
    uint32_t magnitude = value < 0 ? 0u - (uint32_t)value : (uint32_t)value;
    if (value < 0) {
        app_putc('-');
    }
    do {
        digits[n++] = (char)('0' + (int)(magnitude % 10u));
        magnitude /= 10u;
    } while (magnitude != 0u);
    while (n > 0) {
        app_putc(digits[--n]);
    }
}

void app_put_hex8(uint8_t value)
{
    static const char hex[] = "0123456789abcdef";
    app_putc(hex[value >> 4]);
    app_putc(hex[value & 0xFu]);
}

void app_put_hex32(uint32_t value)
{
    app_puts("0x");
    for (int shift = 24; shift >= 0; shift -= 8) {
        app_put_hex8((uint8_t)(value >> shift));
    }
}

/* Arm semihosting: the debugger (here QEMU's -semihosting) ends the run with `status` as its
 * exit code. SYS_EXIT_EXTENDED (0x20) because the AArch32 SYS_EXIT (0x18) cannot carry a
 * status. On a board without a debugger the BKPT faults and the core locks up: stopped. */
void app_exit(int status)
{
    static uint32_t block[2];
    block[0] = 0x20026u; /* ADP_Stopped_ApplicationExit */
    block[1] = (uint32_t)status;
    console_flush();
    register uint32_t op __asm__("r0") = 0x20u;
    register uint32_t *arg __asm__("r1") = block;
    __asm__ volatile("bkpt 0xab" : "+r"(op) : "r"(arg) : "memory");
    for (;;) {
    }
}
"""


def console_c(board: Board) -> str:
    """The console source for ``board``'s UART (EdgennError for a board without one)."""
    template = _UARTS.get(board.uart or "")
    if template is None:
        raise EdgennError(f"board {board.name!r} has no console UART for an example application")
    divisor = max(16, round(board.clock_hz / BAUD))  # the CMSDK UART needs a divisor >= 16
    uart = template.format(base=board.uart_base, divisor=divisor, clock=board.clock_hz,
                           baud=BAUD)
    return ("/* Console of the example application on " + board.name + ". */\n"
            "#include <stdint.h>\n#include <string.h>\n\n#include \"console.h\"\n\n"
            + uart + "\n" + _COMMON)
