"""Byte-level mutators: format-blind damage to any model file (.onnx or .tflite).

Each is a ``Mutator``: ``(data, rng) -> bytes``, a pure function of the file and the random
generator. They model what storage, transfer and careless tools do to a file (flipped bits,
a cut-off download, pieces of two files glued together) and what an attacker's dumb fuzzer
does first; the structure-aware mutators (``onnx_mutators``, ``tflite_mutators``) reach past
the parsers.
"""

from __future__ import annotations

import random
from collections.abc import Callable

Mutator = Callable[[bytes, random.Random], bytes]

# Values that sit on integer boundaries: lengths, offsets and counts set to these reach the
# overflow and sign paths a random byte rarely does.
_INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFF)


def bit_flips(data: bytes, rng: random.Random) -> bytes:
    """Flip 1-8 random bits."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def interesting_bytes(data: bytes, rng: random.Random) -> bytes:
    """Overwrite 1-4 bytes with boundary values (0, 1, 0x7f, 0x80, 0xff)."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] = rng.choice(_INTERESTING)
    return bytes(out)


def truncate(data: bytes, rng: random.Random) -> bytes:
    """Cut the file short: anywhere, biased towards the first kilobyte (headers, tables)."""
    end = rng.randrange(min(len(data), 1024)) if rng.random() < 0.5 else rng.randrange(len(data))
    return data[:end]


def splice(data: bytes, rng: random.Random) -> bytes:
    """Replace a span with a span copied from elsewhere in the same file (offsets now point
    at the wrong structures)."""
    n = len(data)
    length = rng.randint(1, max(1, min(256, n // 4)))
    src = rng.randrange(max(1, n - length))
    dst = rng.randrange(max(1, n - length))
    return data[:dst] + data[src:src + length] + data[dst + length:]


def duplicate_chunk(data: bytes, rng: random.Random) -> bytes:
    """Insert a second copy of a span right after it (everything behind it shifts)."""
    n = len(data)
    length = rng.randint(1, max(1, min(512, n // 8)))
    start = rng.randrange(max(1, n - length))
    return data[:start + length] + data[start:start + length] + data[start + length:]


def delete_chunk(data: bytes, rng: random.Random) -> bytes:
    """Remove a span from the middle of the file."""
    n = len(data)
    length = rng.randint(1, max(1, min(512, n // 8)))
    start = rng.randrange(max(1, n - length))
    return data[:start] + data[start + length:]


BYTE_MUTATORS: list[Mutator] = [bit_flips, interesting_bytes, truncate, splice,
                                duplicate_chunk, delete_chunk]
