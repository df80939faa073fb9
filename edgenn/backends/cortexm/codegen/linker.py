"""The one linker script every generated application uses: code and constants in FLASH,
``.data`` / ``.bss`` and the stack (at the top) in RAM. Boards differ only in the map and in
what they append (the QEMU input staging area)."""

from __future__ import annotations


def _length(kb: float) -> str:
    """A region's LENGTH: whole KiB as ``NK``, a fraction of a KiB in bytes."""
    return f"{int(kb)}K" if float(kb).is_integer() else str(int(kb * 1024))


def linker_script(title: str, flash_origin: int, flash_kb: float, ram_origin: int,
                  ram_kb: int, stack_bytes: int, bss_at_ram: bool = False,
                  tail: str = "") -> str:
    """``title`` goes into the header comment (already comment-safe); ``bss_at_ram`` gives
    ``.bss`` a load address in RAM (QEMU zero-fills a NOLOAD segment at its load address);
    ``tail``: extra symbol definitions and checks placed before the stack's."""
    bss_at = " AT > RAM" if bss_at_ram else ""
    bss_note = ("  /* why AT: QEMU zero-fills a NOLOAD segment at its load address */"
                if bss_at_ram else "")
    return f"""\
/* {title}: {flash_kb:g} KiB flash at 0x{flash_origin:08X}, {ram_kb} KiB RAM at \
0x{ram_origin:08X}, {stack_bytes} B stack */
MEMORY
{{
    FLASH (rx)  : ORIGIN = 0x{flash_origin:08X}, LENGTH = {_length(flash_kb)}
    RAM   (rwx) : ORIGIN = 0x{ram_origin:08X}, LENGTH = {_length(ram_kb)}
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
    }} > RAM{bss_at}{bss_note}
{tail}
    _estack = ORIGIN(RAM) + LENGTH(RAM);
    _sstack = _estack - _stack_size;
    ASSERT(_ebss <= _sstack, "RAM overflow: .data + .bss + stack do not fit the RAM")
}}
"""
