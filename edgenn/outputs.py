"""Outputs as transactions: what a command writes appears whole, when it succeeded, or not at
all (docs/outputs.md).

Every output is built in a temporary sibling of its path (same folder, hidden name
``.NAME.edgenn-tmp-XXXX``: the same file system, so the final move is a rename) and moved
into place only at the end. On any failure, Ctrl-C included, the temporary is removed, and
so are the parent folders this module created: the path is exactly as it was.

- :func:`atomic_file`: one file (a context manager yielding the temporary path to write).
- :func:`staged_files`: several files of one command, put in place together.
- :func:`owned_dir`: a generated folder. It holds ``.edgenn-manifest.json``, the list of the
  files an edgenn build generated there (with their sha256). A later build into the same
  folder replaces those files and removes the ones it no longer generates; it refuses
  (``OutputError``, naming the first one) to overwrite any other file, or a listed file whose
  content changed since, unless ``force``. Files it does not generate are never touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from edgenn.errors import OutputError
from edgenn.version import edgenn_version

TMP_TAG = ".edgenn-tmp-"
OLD_TAG = ".edgenn-old-"  # the previous version of a file, while a folder is being replaced
MANIFEST = ".edgenn-manifest.json"
MANIFEST_SCHEMA = "edgenn.manifest/1"


# -- single files ------------------------------------------------------------------------------
@contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block succeeds, move it onto ``path``.

    The temporary keeps ``path``'s suffix (writers that choose a format by it, matplotlib's
    ``savefig``, work unchanged) and ordinary permissions. Missing parent folders are
    created, and removed again on failure. OutputError when ``path`` is a folder."""
    with staged_files() as stage:
        yield stage.path(path)


class Stage:
    """Files of one command written to temporary siblings (:meth:`path`), put in place
    together by :func:`staged_files` when the command succeeded."""

    def __init__(self) -> None:
        self._pairs: list[tuple[Path, Path]] = []  # (temporary, final)
        self._created: list[Path] = []  # parent folders made for them

    def path(self, target: str | os.PathLike[str]) -> Path:
        """The temporary path to write ``target``'s content to."""
        final = Path(target)
        if final.is_dir():
            raise OutputError(f"{final}: is a folder, not a file")
        if any(final == f for _, f in self._pairs):
            raise OutputError(f"{final}: given twice as an output")
        self._created += _make_parents(final.parent)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}{TMP_TAG}", suffix=final.suffix,
                                       dir=final.parent)
        except OSError as err:
            raise OutputError(f"{final}: cannot write here ({err.strerror})") from None
        os.fchmod(fd, 0o666 & ~_umask())  # why: mkstemp makes 0600, an output is ordinary
        os.close(fd)
        self._pairs.append((Path(tmp), final))
        return Path(tmp)

    def _commit(self) -> None:
        try:
            _swap(self._pairs, [])
        except OSError as err:
            raise OutputError(f"{err.filename or 'an output'}: cannot be put in place "
                              f"({err.strerror})") from None

    def _abort(self) -> None:
        for tmp, _ in self._pairs:
            tmp.unlink(missing_ok=True)
        _remove_empty(self._created)


@contextmanager
def staged_files() -> Iterator[Stage]:
    """A :class:`Stage`; its files replace their targets when the block succeeds (each
    target's old content is kept aside until all are in place, and restored if one fails)."""
    stage = Stage()
    try:
        yield stage
        stage._commit()
    except BaseException:
        stage._abort()
        raise


# -- stores that are appended to -------------------------------------------------------------
@contextmanager
def new_file_guard(path: Path | None, keep: Callable[[], bool],
                   companions: tuple[str, ...] = ()) -> Iterator[None]:
    """For a file that is appended to in place (a database: its own transactions keep it
    whole) rather than replaced: when ``path`` does not exist yet and the block fails, remove
    it, its ``companions`` (suffixes: ``-wal``, ``-journal``) and the parent folders made for
    it, unless ``keep()`` (it already holds results worth keeping). An existing file is
    left to the store."""
    if path is None or path.exists():
        yield
        return
    missing = _missing_dirs(path.parent)
    try:
        yield
    except BaseException:
        if not keep():
            for p in [path, *(path.with_name(path.name + c) for c in companions)]:
                p.unlink(missing_ok=True)
            _remove_empty(missing)
        raise


# -- generated folders -------------------------------------------------------------------------
@contextmanager
def owned_dir(path: str | os.PathLike[str], force: bool = False, command: str = ""
              ) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path`` to build the output in; when the block
    succeeds, make ``path`` hold it (see the module's docstring) with its manifest.

    A new ``path`` is the temporary folder renamed. An existing one is updated file by file:
    generated files replace the ones an earlier build listed, listed files no longer
    generated are removed, other files stay. OutputError (before anything changes) when
    ``path`` is not a folder, or the build would overwrite a file no earlier build listed
    (or one edited since) and not ``force``. ``command``: recorded in the manifest."""
    shown = Path(path)
    if shown.exists() and not shown.is_dir():
        raise OutputError(f"{shown}: exists and is not a folder")
    # why resolve: "." has no name to make a sibling of, and a symlinked folder's files are
    # replaced where they are (a rename does not cross file systems)
    target = shown.resolve()
    created = _make_parents(target.parent)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}{TMP_TAG}", dir=target.parent))
    except OSError as err:
        _remove_empty(created)
        raise OutputError(f"{shown}: cannot build beside it in {target.parent} "
                          f"({err.strerror})") from None
    os.chmod(tmp, 0o777 & ~_umask())  # why: mkdtemp makes 0700, an output is an ordinary folder
    try:
        yield tmp
        try:
            _commit_dir(tmp, target, shown, force, command)
        except OSError as err:  # why here: after _swap put every old file back
            raise OutputError(f"{shown}: cannot be put in place ({err.strerror})") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(created)
        raise
    shutil.rmtree(tmp, ignore_errors=True)  # what is left: the folders the files moved out of


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """The files (relative POSIX path -> sha256) an edgenn build generated in ``folder``; an
    absent or unreadable manifest lists none (then every file there is foreign). A listed
    path that leads outside ``folder`` (``..``, absolute, through a symlink) is ignored: a
    manifest is a file anyone may have written, and a build removes what it lists."""
    root = Path(folder).resolve()
    try:
        data = json.loads((root / MANIFEST).read_text())
        files = data["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(files, dict):
        return {}
    return {str(k): str(v) for k, v in files.items() if _inside(root, str(k))}


def _inside(root: Path, rel: str) -> bool:
    path = Path(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return False
    return (root / path).resolve().is_relative_to(root)


def _commit_dir(tmp: Path, target: Path, shown: Path, force: bool, command: str) -> None:
    new = _files_under(tmp)
    manifest: dict[str, Any] = {"schema": MANIFEST_SCHEMA, "edgenn_version": edgenn_version(),
                                "command": command,
                                "files": {rel: _sha256(tmp / rel) for rel in new}}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    if not target.exists():
        os.rename(tmp, target)
        return
    old = read_manifest(target)
    owned = {rel for rel, sha in old.items() if _is_file(target / rel)
             and _sha256(target / rel) == sha}
    for rel in new:
        _check_writable(target, shown, rel, rel in owned or force)
    stale = sorted(set(owned) - set(new))
    _swap([(tmp / rel, target / rel) for rel in [*new, MANIFEST]],
          [target / rel for rel in stale])
    _remove_empty_dirs_of(target, stale)


def _check_writable(target: Path, shown: Path, rel: str, may_replace: bool) -> None:
    """OutputError when generated file ``rel`` cannot go into ``target``: a file is where
    one of its folders goes, a folder is where it goes, or a foreign file is."""
    parts = Path(rel).parts
    for i in range(1, len(parts)):
        above = target.joinpath(*parts[:i])
        if above.exists() and not above.is_dir():
            raise OutputError(f"{shown.joinpath(*parts[:i])}: exists and is not a folder "
                              f"(the build writes {shown / rel})")
    where = target / rel
    if where.is_dir():
        raise OutputError(f"{shown / rel}: is a folder where the build writes a file")
    if (where.exists() or where.is_symlink()) and not may_replace:
        raise OutputError(f"{shown / rel}: not generated by an earlier edgenn run in {shown} "
                          "(or changed since); refusing to overwrite it (--force does)")


def _files_under(folder: Path) -> list[str]:
    """The relative POSIX paths of every file under ``folder``, sorted (the manifest aside)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST)


def _is_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- moving into place -------------------------------------------------------------------------
def _swap(pairs: list[tuple[Path, Path]], remove: list[Path]) -> None:
    """Move each (new, final) pair's file onto final and delete ``remove``, as one step: the
    old files go aside first (renamed beside themselves) and come back if any move fails,
    Ctrl-C included; deleted only once every new file is in place."""
    aside: list[tuple[Path, Path]] = []  # (kept-aside copy, where it was)
    placed: list[Path] = []
    made: list[Path] = []
    try:
        for path in [final for _, final in pairs] + remove:
            if path.exists() or path.is_symlink():
                keep = _free_name(path, OLD_TAG)
                os.replace(path, keep)
                aside.append((keep, path))
        for new, final in pairs:
            made += _make_parents(final.parent)
            os.replace(new, final)
            placed.append(final)
    except BaseException:
        for final in reversed(placed):
            final.unlink(missing_ok=True)
        for keep, path in reversed(aside):
            os.replace(keep, path)
        _remove_empty(made)
        raise
    for keep, _ in aside:
        keep.unlink(missing_ok=True)


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _free_name(path: Path, tag: str) -> Path:
    while True:
        candidate = path.with_name(f".{path.name}{tag}{secrets.token_hex(4)}")
        if not candidate.exists():
            return candidate


def _missing_dirs(folder: Path) -> list[Path]:
    """``folder`` and its parents that do not exist, outermost first."""
    missing: list[Path] = []
    here = folder
    while not here.exists() and here.parent != here:
        missing.append(here)
        here = here.parent
    return missing[::-1]


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; return the ones created, outermost first.
    OutputError when a file is in the way."""
    missing = _missing_dirs(folder)
    above = missing[0].parent if missing else folder
    if not above.is_dir():
        raise OutputError(f"{above}: exists and is not a folder")
    created: list[Path] = []
    try:
        for d in missing:
            d.mkdir()
            created.append(d)
    except OSError as err:
        _remove_empty(created)
        raise OutputError(f"{folder}: cannot create the folder ({err.strerror})") from None
    return created


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders (innermost first) that are empty."""
    for d in reversed(folders):
        # why suppress: not empty (someone else's file) or already gone: keep it
        with contextlib.suppress(OSError):
            d.rmdir()


def _remove_empty_dirs_of(root: Path, rels: list[str]) -> None:
    """After removing stale files: their folders below ``root`` that are now empty."""
    dirs = {root.joinpath(*Path(rel).parts[:i]) for rel in rels
            for i in range(1, len(Path(rel).parts))}
    _remove_empty(sorted(dirs, key=lambda d: len(d.parts)))
