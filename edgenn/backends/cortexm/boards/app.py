"""The example application of a generated library on a real board: ``app_files``.

The application includes only the library's header, initialises it, runs every input the host
staged in flash and prints each output as one hex line on the console UART::

    @edgenn boot <board>
    @out <item> <output index> <hex bytes>
    @edgenn done

then ends the run through semihosting with exit status 0 (1: the library returned an error,
2: bad staged inputs, 3: a fault; the console line before says which). The staging area
(``startup.STAGE_START`` .. ``STAGE_END``) holds, little-endian::

    u32 magic "EDGS", u32 item count, u32 input count, u32 bytes of each input,
    then the inputs of item 0, of item 1, ... back to back

The generated C never contains a name taken from the model: only ``lib_name`` (checked to be a
C identifier) and numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from edgenn.backends.cortexm.boards.board import Board, get_board
from edgenn.backends.cortexm.boards.console import CONSOLE_H, console_c
from edgenn.backends.cortexm.boards.startup import STAGE_END, STAGE_START, STARTUP_C, linker_script
from edgenn.errors import EdgennError

STAGE_MAGIC = 0x53474445  # b"EDGS" read as a little-endian u32
EXIT_OK, EXIT_LIBRARY_ERROR, EXIT_BAD_STAGE, EXIT_FAULT = 0, 1, 2, 3
OUTPUT_PREFIX = "@out"
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")

_MAIN_C = """\
/* Example application of the @LIB@ library on the @BOARD@ board: runs every input the host
 * staged in flash and prints each output as a hex line on the console UART. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "@LIB@.h"
#include "console.h"

/* Staging area (linker.ld): u32 magic "EDGS", item count, input count, the bytes of each
 * input, then the inputs of item 0, of item 1, ... back to back. */
extern const uint8_t @STAGE_START@[];
extern const uint8_t @STAGE_END@[];
#define STAGE_MAGIC 0x@MAGIC@u

static const uint32_t input_bytes[@LIBU@_INPUT_COUNT] = {@INPUT_BYTES@};
static const uint32_t output_bytes[@LIBU@_OUTPUT_COUNT] = {@OUTPUT_BYTES@};
@ARENA@
static void print_output(uint32_t item, uint32_t k)
{
    const uint8_t *data = (const uint8_t *)@LIB@_output((int)k);
    app_puts("@OUT@ ");
    app_put_dec((int32_t)item);
    app_putc(' ');
    app_put_dec((int32_t)k);
    app_putc(' ');
    for (uint32_t b = 0; b < output_bytes[k]; ++b) {
        app_put_hex8(data[b]);
    }
    app_putc('\\n');
}

int main(void)
{
    app_console_init();
    app_puts("@edgenn boot @BOARD@\\n");
    const uint8_t *stage = @STAGE_START@;
    size_t room = (size_t)((uintptr_t)@STAGE_END@ - (uintptr_t)@STAGE_START@);
    if (room < 12u || app_read_u32(stage) != STAGE_MAGIC) {
        return app_fail("no staged inputs in a staging area of bytes ", (int32_t)room, @BAD@);
    }
    uint32_t items = app_read_u32(stage + 4);
    uint32_t count = app_read_u32(stage + 8);
    if (count != @LIBU@_INPUT_COUNT) {
        return app_fail("staged inputs per item: ", (int32_t)count, @BAD@);
    }
    size_t offset = 12u + 4u * (size_t)count;
    size_t item_bytes = 0;
    for (uint32_t k = 0; k < count; ++k) {
        if (app_read_u32(stage + 12u + 4u * k) != input_bytes[k]) {
            return app_fail("staged bytes differ from the library's for input ", (int32_t)k, @BAD@);
        }
        item_bytes += input_bytes[k];
    }
    if (offset > room || (item_bytes > 0u && (room - offset) / item_bytes < items)) {
        return app_fail("staged items overrun the staging area: ", (int32_t)items, @BAD@);
    }

    int status = @INIT@;
    if (status != @LIBU@_OK) {
        return app_fail("@LIB@_init returned ", status, @LIBERR@);
    }
    for (uint32_t item = 0; item < items; ++item) {
        for (uint32_t k = 0; k < count; ++k) {
            memcpy(@LIB@_input((int)k), stage + offset, input_bytes[k]);
            offset += input_bytes[k];
        }
        status = @LIB@_invoke();
        if (status != @LIBU@_OK) {
            return app_fail("@LIB@_invoke returned ", status, @LIBERR@);
        }
        for (uint32_t k = 0; k < @LIBU@_OUTPUT_COUNT; ++k) {
            print_output(item, k);
        }
    }
    app_puts("@edgenn done\\n");
    return @OK@;
}
"""

_STATIC_ARENA = ""
_EXTERNAL_ARENA = """
/* The library's working memory (an external-arena build) */
#ifdef @LIBU@_ARENA_ALIGNMENT
#define APP_ARENA_ALIGNMENT @LIBU@_ARENA_ALIGNMENT
#else
#define APP_ARENA_ALIGNMENT 16
#endif
static uint8_t arena[@LIBU@_ARENA_BYTES] __attribute__((aligned(APP_ARENA_ALIGNMENT)));
"""


def check_lib_name(lib_name: str) -> str:
    """``lib_name`` if it is a C identifier (what the generated C may contain), else
    EdgennError."""
    if not _IDENTIFIER.fullmatch(lib_name):
        raise EdgennError(f"library name {lib_name!r} is not a C identifier "
                          "(^[A-Za-z][A-Za-z0-9_]*$)")
    return lib_name


def _io_count(manifest: Mapping[str, Any], key: str) -> int:
    entries = manifest.get(key)
    if not isinstance(entries, list) or not entries:
        raise EdgennError(f"manifest of the library has no {key!r} list")
    return len(entries)


def main_c(board: Board, lib_name: str, manifest: Mapping[str, Any]) -> str:
    """The application's ``main.c`` for the library ``lib_name`` described by ``manifest``."""
    lib = check_lib_name(lib_name)
    upper = lib.upper()
    n_in, n_out = _io_count(manifest, "inputs"), _io_count(manifest, "outputs")
    external = manifest.get("arena") == "external"
    replacements = {
        "@ARENA@": _EXTERNAL_ARENA if external else _STATIC_ARENA,
        "@INIT@": (f"{lib}_init_with_arena(arena, sizeof arena)" if external
                   else f"{lib}_init()"),
        "@INPUT_BYTES@": ", ".join(f"{upper}_INPUT{i}_BYTES" for i in range(n_in)),
        "@OUTPUT_BYTES@": ", ".join(f"{upper}_OUTPUT{i}_BYTES" for i in range(n_out)),
        "@STAGE_START@": STAGE_START, "@STAGE_END@": STAGE_END,
        "@MAGIC@": f"{STAGE_MAGIC:08X}", "@OUT@": OUTPUT_PREFIX, "@BOARD@": board.name,
        "@OK@": str(EXIT_OK), "@LIBERR@": str(EXIT_LIBRARY_ERROR), "@BAD@": str(EXIT_BAD_STAGE),
        "@LIBU@": upper, "@LIB@": lib,  # last: the other keys' values contain them
    }
    text = _MAIN_C
    for key, value in replacements.items():
        text = text.replace(key, value)
    return text


def app_files(board: str | Board, lib_name: str, manifest: Mapping[str, Any],
              stack_bytes: int) -> dict[str, str]:
    """The example application of library ``lib_name`` on ``board``: file name -> text.

    ``main.c``, ``startup.c``, ``console.c``/``console.h`` and ``linker.ld`` (the board's
    memory map, ``stack_bytes`` of stack at the top of RAM). Compile every ``.c`` with the
    library's sources and link with ``-T linker.ld -nostartfiles``. EdgennError for the
    generic board (it runs the emulator harness instead) or a bad ``lib_name``.
    """
    b = get_board(board)
    if b.is_generic:
        raise EdgennError(f"board {b.name!r} has no example application: its firmware runs "
                          "in edgenn's emulator")
    return {
        "main.c": main_c(b, lib_name, manifest),
        "startup.c": STARTUP_C,
        "console.c": console_c(b),
        "console.h": CONSOLE_H,
        "linker.ld": linker_script(b, stack_bytes),
    }


def app_sources(files: Mapping[str, str]) -> list[str]:
    """The C sources among ``app_files``' files, in a stable order."""
    return sorted(name for name in files if name.endswith(".c"))
