"""Text from a model file made safe for generated C, CMake and Makefiles.

Model, tensor and file names come from untrusted files. They reach generated text in two
ways only: as the library's name (a C identifier prefixing every symbol and macro, also the
CMake target and archive name) and inside C block comments. Everything else the generator
writes is its own vocabulary.
"""

from __future__ import annotations

import re

# why: C99 keywords and the names C reserves for the implementation; a library called `int`
# or `_Bool` would not compile, one called `__foo` would be undefined behaviour.
_C_KEYWORDS = frozenset((
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "bool", "true", "false", "asm",
))
_MAX_IDENTIFIER = 48  # leaves room for the longest suffix (`_init_with_arena`) within 63
_COMMENT_MAX = 120


def c_identifier(text: str, fallback: str = "model") -> str:
    """``text`` as a lower-case C identifier: ``[a-z][a-z0-9_]*``, at most 48 characters.

    Runs of other characters become one ``_``; a name that would start with a digit, an
    underscore or ``edgenn`` (the shared kernel runtime's prefix), or that is a C keyword, gets
    a ``m_`` prefix; an empty result is ``fallback``.
    """
    name = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if not name:
        return fallback
    if name[0].isdigit() or name in _C_KEYWORDS or name.startswith("edgenn"):
        name = "m_" + name
    return name[:_MAX_IDENTIFIER].rstrip("_")


def check_identifier(name: str) -> str:
    """``name`` unchanged if it is what :func:`c_identifier` produces, else ValueError."""
    if c_identifier(name) != name:
        raise ValueError(f"{name!r} is not a sanitised C identifier "
                         f"(use {c_identifier(name)!r})")
    return name


def c_comment(text: str) -> str:
    """``text`` safe inside ``/* ... */``: printable ASCII, no comment delimiters, no
    trigraphs, no line breaks, at most 120 characters."""
    safe = "".join(ch if " " <= ch <= "~" else "?" for ch in str(text))
    safe = safe.replace("*/", "*_/").replace("/*", "/_*").replace("??", "?_?")
    safe = safe.replace("\\", "/")  # why: no line splicing, whatever follows
    return safe if len(safe) <= _COMMENT_MAX else safe[:_COMMENT_MAX - 3] + "..."
