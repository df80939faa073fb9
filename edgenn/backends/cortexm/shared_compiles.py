"""Identical gcc compiles shared by the builds of one process.

Builds made side by side in one command (``--fuse auto``'s two candidates, the flash policy's
trials) compile the same kernel and runtime sources (``edgenn_move.c``, ``startup.c``, ...)
with the same flags. A compile's object follows from its inputs alone: the compiler, its
flags, the source's name (the object's file symbol) and the text of the source and of every
project header it includes (the object holds no path of its folder: no ``-g``). So the first
build to need an object compiles it and the others copy it, byte for byte what their own gcc
run would have written.

Nothing is kept beyond the process, and nothing is read from an earlier one
(``EDGENN_TRIAL_CACHE=off`` measures cold compiles; this is not a cache across commands). An
object whose producer failed, or whose file has gone (its temporary folder removed), is
compiled again by whoever needs it, so an error is always reported by the build it belongs to.
A source that includes a quoted header not in its folder is never shared.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)
_LIMIT = 4096  # objects remembered (a long-lived process); beyond, the table starts again

_lock = threading.Lock()
_objects: dict[str, Future[Path]] = {}


def compile_key(compiler: str, cwd: Path, source: str, flags: Sequence[str]) -> str | None:
    """What the object of ``source`` (in ``cwd``) follows from, hashed; None when a quoted
    include cannot be read in ``cwd`` (every project header sits beside its sources)."""
    digest = hashlib.sha256()
    for part in (compiler, source, *flags):
        digest.update(part.encode() + b"\0")
    seen: set[str] = set()
    todo = [source]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            text = (cwd / name).read_bytes()
        except OSError:
            return None
        digest.update(name.encode() + b"\0" + len(text).to_bytes(8, "little") + text)
        # why every include, whatever #if guards it: a superset of the real inputs is safe
        todo.extend(m.decode() for m in _INCLUDE.findall(text))
    return digest.hexdigest()


def compile_shared(key: str | None, cwd: Path, obj: str, compile_here: Callable[[], None]) -> None:
    """Make ``cwd / obj``: copied from the process's compile of the same ``key`` when there is
    one (waiting for it while it runs), else by ``compile_here()`` (then shared)."""
    if key is None:
        compile_here()
        return
    with _lock:
        made = _objects.get(key)
        if made is None:
            if len(_objects) >= _LIMIT:
                _objects.clear()
            made = _objects[key] = Future()
            mine = True
        else:
            mine = False
    if mine:
        try:
            compile_here()
        except BaseException as err:
            with _lock:
                if _objects.get(key) is made:
                    del _objects[key]
            made.set_exception(err)
            raise
        made.set_result(cwd / obj)
        return
    try:
        source = made.result()
        shutil.copyfile(source, cwd / obj)
    except Exception:  # noqa: BLE001 - why: its failure or a removed folder is reported by our own compile
        compile_here()
