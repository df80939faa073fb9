"""Outputs are transactions and generated folders are owned (issue 23, rows 1-4 of its table):
a failed or interrupted command leaves its output path exactly as it was, a build never
overwrites a file it did not generate (without ``--force``), and ``edgenn --version``.

The oracle is the file system itself: every test snapshots the output path's files (bytes)
before the command and compares afterwards; no hidden temporary sibling may remain.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from edgenn.cli.main import main
from edgenn.errors import OutputError
from edgenn.outputs import (
    MANIFEST,
    atomic_file,
    new_file_guard,
    owned_dir,
    read_manifest,
    staged_files,
)
from tests.cli_errors import error_line

ROOT = Path(__file__).resolve().parents[1]
CONV2 = ROOT / "tests" / "fixtures" / "tflite" / "conv2_int8.tflite"  # 78 KB of flash
DWSEP = ROOT / "tests" / "fixtures" / "tflite" / "dwsep_int8.tflite"  # a small, quick build
FLOAT_CNN = ROOT / "tests" / "fixtures" / "float" / "float_cnn.tflite"
USER_MAIN = b"/* the user's own application */\nint main(void) { return 0; }\n"
NOTES = b"my notes\n"


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes), hidden ones included."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def no_temporaries(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if ".edgenn-tmp-" in p.name
                or ".edgenn-old-" in p.name]


def compile_argv(model: Path, out: Path, *extra: str) -> list[str]:
    return ["compile", str(model), "--target", "cortex-m4", "-o", str(out), *extra]


# -- row 4: --version --------------------------------------------------------------------------
def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out.strip()
    assert re.fullmatch(r"edgenn \d+\.\d+\.\d+\S*", out)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    import edgenn

    # why both: the installed metadata is printed, the literal is the fallback of a checkout
    assert out == f"edgenn {declared}" and edgenn.__version__ == declared


# -- row 1: the user's main.c, notes.txt; the library folder -----------------------------------
def test_compile_refuses_a_foreign_file_and_force_keeps_the_others(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "main.c").write_bytes(USER_MAIN)
    (proj / "notes.txt").write_bytes(NOTES)
    before = snapshot(proj)

    err = error_line(capsys, compile_argv(DWSEP, proj, "--name", "ad"))
    assert "main.c" in err and "--force" in err
    assert snapshot(proj) == before and no_temporaries(tmp_path)

    assert main(compile_argv(DWSEP, proj, "--name", "ad", "--force")) == 0
    capsys.readouterr()
    assert (proj / "notes.txt").read_bytes() == NOTES  # not generated: never touched
    assert (proj / "main.c").read_bytes() != USER_MAIN
    top = {p.name for p in proj.iterdir()}
    assert {"ad.c", "ad.h", "libad.a", "main.c", "Makefile", MANIFEST, "build"} <= top
    # the library folder holds no build products; they are in build/
    assert not [n for n in top if n.endswith((".o", ".elf", ".map"))]
    built = {p.name for p in (proj / "build").iterdir()}
    assert {"model.elf", "model.map", "ad.o"} <= built
    manifest = json.loads((proj / MANIFEST).read_text())
    assert "notes.txt" not in manifest["files"] and "build/model.elf" in manifest["files"]
    assert manifest["command"].startswith("edgenn compile") and manifest["edgenn_version"]
    assert no_temporaries(tmp_path)


def test_a_second_build_replaces_its_own_files_and_removes_the_stale_ones(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = tmp_path / "proj"
    assert main(compile_argv(DWSEP, proj, "--name", "first")) == 0
    (proj / "notes.txt").write_bytes(NOTES)
    # an owned folder: the second build (another library, no application) replaces ours
    assert main(compile_argv(DWSEP, proj, "--name", "second", "--library-only")) == 0
    capsys.readouterr()
    top = {p.name for p in proj.iterdir()}
    assert {"second.c", "second.h", "libsecond.a", "notes.txt"} <= top
    # what only the first build generated was ours: gone, its empty build products too
    assert not top & {"first.c", "first.h", "libfirst.a", "main.c", "startup.c", "linker.ld"}
    assert not (proj / "build" / "model.elf").exists()
    assert set(read_manifest(proj)) == {p for p in snapshot(proj)
                                        if p not in (MANIFEST, "notes.txt")}

    # a generated file the user edited since is theirs now: refused, kept
    header = proj / "second.h"
    header.write_text(header.read_text() + "/* my change */\n")
    before = snapshot(proj)
    err = error_line(capsys, compile_argv(DWSEP, proj, "--name", "second", "--library-only"))
    assert "second.h" in err
    assert snapshot(proj) == before and no_temporaries(tmp_path)


# -- row 2: a failing build (the flash policy's trials) leaves the path as it was --------------
def test_a_failing_compile_leaves_the_output_path_as_it_was(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fk = tmp_path / "fk"
    err = error_line(capsys, compile_argv(CONV2, fk, "--flash-kb", "10"))
    assert "--flash-kb 10" in err
    assert not fk.exists() and list(tmp_path.iterdir()) == []

    fk.mkdir()
    (fk / "notes.txt").write_bytes(NOTES)
    (fk / "sub").mkdir()
    (fk / "sub" / "data.bin").write_bytes(bytes(range(256)))
    before = snapshot(fk)
    error_line(capsys, compile_argv(CONV2, fk, "--flash-kb", "10"))
    assert snapshot(fk) == before and no_temporaries(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fk"]


def test_an_interrupted_compile_leaves_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    # why the build: the project's files are written by then (a Ctrl-C during gcc)
    monkeypatch.setattr("edgenn.backends.cortexm.executable.build_project", interrupted)
    out = tmp_path / "new" / "proj"
    assert main(compile_argv(DWSEP, out)) == 130
    assert list(tmp_path.iterdir()) == []  # the parent folder it made is gone too


# -- row 3: an output path that is a file ------------------------------------------------------
@pytest.mark.parametrize("below", [False, True])
def test_compile_into_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         below: bool) -> None:
    afile = tmp_path / "afile"
    afile.write_bytes(NOTES)
    err = error_line(capsys, compile_argv(DWSEP, afile / "sub" if below else afile))
    assert "afile" in err and "not a folder" in err
    assert afile.read_bytes() == NOTES and sorted(tmp_path.iterdir()) == [afile]


# -- the other commands' outputs ---------------------------------------------------------------
def test_quantize_writes_both_outputs_or_neither(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    calib = tmp_path / "calib.npz"
    rng = np.random.default_rng(0)
    np.savez(calib, x=rng.random((4, 28, 28, 1), dtype=np.float32))
    (tmp_path / "taken").mkdir()
    out = tmp_path / "q" / "m_int8.tflite"
    argv = ["quantize", str(FLOAT_CNN), "--calib", str(calib), "-o", str(out)]
    # the summary cannot be written (a folder is in its place): no model either
    err = error_line(capsys, [*argv, "--json", str(tmp_path / "taken")])
    assert "taken" in err
    assert not (tmp_path / "q").exists() and no_temporaries(tmp_path)
    assert main([*argv, "--json", str(tmp_path / "q" / "summary.json")]) == 0
    assert out.stat().st_size > 0
    assert json.loads((tmp_path / "q" / "summary.json").read_text())["output"] == str(out)


def test_run_outputs_appear_together_or_not_at_all(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgenn.cli import common

    y = tmp_path / "y.npy"
    y.write_bytes(b"old")
    calls = []

    def fail_second(path: str, array: np.ndarray) -> None:
        calls.append(path)
        raise KeyboardInterrupt

    monkeypatch.setattr(common, "write_csv_rows", fail_second)
    with pytest.raises(KeyboardInterrupt):
        common.save_outputs([str(y), str(tmp_path / "out" / "z.csv")], ("a", "b"),
                            [np.zeros(3, np.int8), np.ones(3, np.int8)])
    assert calls  # the first output was written before the second failed
    assert y.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [y]


def test_bench_json_failure_leaves_nothing(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from edgenn.cli import bench_cmd

    real = bench_cmd.write_json

    def write_then_fail(path: str | None, data: object) -> bool:
        real(path, data)
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_cmd, "write_json", write_then_fail)
    argv = ["bench", str(DWSEP), "--target", "ref", "--repeats", "1", "--warmup", "0",
            "--json", str(tmp_path / "out" / "bench.json")]
    assert main(argv) == 130
    assert list(tmp_path.iterdir()) == []


def test_tune_removes_a_new_database_it_could_not_fill(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("edgenn.tune.session.tune_model", interrupted)
    argv = ["tune", str(FLOAT_CNN), "--trials", "1", "--db", str(tmp_path / "db" / "t.db")]
    assert main(argv) == 130
    assert list(tmp_path.iterdir()) == []


# -- the library: edgenn.outputs ---------------------------------------------------------------
@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_atomic_file_failure_leaves_nothing(tmp_path: Path, error: type[BaseException]) -> None:
    target = tmp_path / "a" / "b" / "plot.png"
    with pytest.raises(error), atomic_file(target) as tmp:
        assert tmp.suffix == ".png" and tmp.parent == target.parent
        tmp.write_bytes(b"half")
        raise error
    assert list(tmp_path.iterdir()) == []
    target.parent.mkdir(parents=True)
    target.write_bytes(b"old")
    with pytest.raises(error), atomic_file(target) as tmp:
        tmp.write_bytes(b"new")
        raise error
    assert snapshot(tmp_path) == {"a/b/plot.png": b"old"}
    with atomic_file(target) as tmp:
        tmp.write_bytes(b"new")
    assert snapshot(tmp_path) == {"a/b/plot.png": b"new"}


def test_staged_files_roll_back_when_a_move_fails(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    (tmp_path / "a.json").write_bytes(b"old a")
    (tmp_path / "b.json").write_bytes(b"old b")
    before = snapshot(tmp_path)
    real = os.replace
    moves = []

    def replace(src: str | Path, dst: str | Path) -> None:
        # fail the second move of a new file into place (the old ones are aside by then)
        if ".edgenn-tmp-" in str(src):
            moves.append(dst)
            if len(moves) == 2:
                raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr("edgenn.outputs.os.replace", replace)
    with pytest.raises(KeyboardInterrupt), staged_files() as stage:
        stage.path(tmp_path / "a.json").write_bytes(b"new a")
        stage.path(tmp_path / "b.json").write_bytes(b"new b")
    assert len(moves) == 2 and snapshot(tmp_path) == before


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_owned_dir_failure_leaves_the_folder_as_it_was(tmp_path: Path,
                                                       error: type[BaseException]) -> None:
    out = tmp_path / "out"
    with pytest.raises(error), owned_dir(out) as tmp:
        (tmp / "x.c").write_bytes(b"half")
        raise error
    assert list(tmp_path.iterdir()) == []
    with owned_dir(out, command="first") as tmp:
        (tmp / "x.c").write_bytes(b"x1")
        (tmp / "gone" / "deep").mkdir(parents=True)
        (tmp / "gone" / "deep" / "y.o").write_bytes(b"y1")
    (out / "notes.txt").write_bytes(NOTES)
    before = snapshot(out)
    with pytest.raises(error), owned_dir(out) as tmp:
        (tmp / "x.c").write_bytes(b"x2")
        raise error
    assert snapshot(out) == before and no_temporaries(tmp_path)
    with owned_dir(out, command="second") as tmp:
        (tmp / "x.c").write_bytes(b"x2")
    assert snapshot(out).keys() == {"x.c", "notes.txt", MANIFEST}
    assert not (out / "gone").exists()  # the stale file's folders were ours, now empty
    assert (out / "x.c").read_bytes() == b"x2"


def test_owned_dir_refuses_foreign_files_before_changing_anything(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_bytes(NOTES)
    (out / "b.h").write_bytes(b"the user's header")
    with pytest.raises(OutputError, match=r"b\.h"), owned_dir(out) as tmp:
        (tmp / "a.c").write_bytes(b"a")
        (tmp / "b.h").write_bytes(b"b")
    assert snapshot(out) == {"mine.txt": NOTES, "b.h": b"the user's header"}
    with owned_dir(out, force=True) as tmp:
        (tmp / "a.c").write_bytes(b"a")
        (tmp / "b.h").write_bytes(b"b")
    assert snapshot(out).keys() == {"mine.txt", "a.c", "b.h", MANIFEST}
    assert read_manifest(out).keys() == {"a.c", "b.h"}
    # a folder where the build writes a file is refused even with force
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "a.c").mkdir()
    with pytest.raises(OutputError, match="is a folder"), \
            owned_dir(tmp_path / "other", force=True) as tmp:
        (tmp / "a.c").write_bytes(b"a")


def test_a_manifest_never_reaches_outside_its_folder(tmp_path: Path) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_bytes(NOTES)
    out = tmp_path / "out"
    out.mkdir()
    (out / "link").symlink_to(tmp_path)
    sha = hashlib.sha256(NOTES).hexdigest()
    files = {"../precious.txt": sha, str(outside): sha, "link/precious.txt": sha}
    (out / MANIFEST).write_text(json.dumps({"files": files}))
    assert read_manifest(out) == {}
    with owned_dir(out) as tmp:  # the listed files are not "ours": nothing is removed
        (tmp / "a.c").write_bytes(b"a")
    assert outside.read_bytes() == NOTES


def test_new_file_guard_keeps_a_store_that_holds_results(tmp_path: Path) -> None:
    db = tmp_path / "cache" / "t.db"
    with pytest.raises(KeyboardInterrupt), new_file_guard(db, lambda: False, ("-wal",)):
        db.parent.mkdir()
        db.write_bytes(b"schema")
        db.with_name("t.db-wal").write_bytes(b"log")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(KeyboardInterrupt), new_file_guard(db, lambda: True):
        db.parent.mkdir()
        db.write_bytes(b"one trial")
        raise KeyboardInterrupt
    assert db.read_bytes() == b"one trial"  # results a rerun resumes from
    with pytest.raises(KeyboardInterrupt), new_file_guard(db, lambda: False):
        raise KeyboardInterrupt  # an existing store is the store's business
    assert db.read_bytes() == b"one trial"


# -- the benchmarks' JSON ----------------------------------------------------------------------
def test_every_benchmark_json_carries_the_version() -> None:
    from edgenn.version import edgenn_version, with_version

    doc = with_version({"benchmark": "x", "rows": [1]})
    assert doc == {"benchmark": "x", "rows": [1], "edgenn_version": edgenn_version()}
    writers = [p for p in sorted((ROOT / "benchmarks").glob("*.py"))
               if "json.dumps(" in p.read_text() and "atomic_write_bytes(" in p.read_text()]
    assert writers
    missing = [p.name for p in writers
               if not re.search(r"with_version\(|edgenn_version\(\)", p.read_text())]
    assert missing == []
