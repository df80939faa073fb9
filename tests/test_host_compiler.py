"""The run-time host C compiler (edgenn.cc): build, cache, load, errors."""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import pytest

from edgenn.cc import Source, compile_shared, compiler_available, find_host_compiler, load_library
from edgenn.errors import ToolchainError

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no host C compiler")

ADD = "int add(int a, int b) { return a + b + OFFSET; }\n"


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def test_builds_loads_and_calls(tmp_path: Path) -> None:
    src = write(tmp_path, "add.c", '#include "offset.h"\n' + ADD)
    write(tmp_path, "offset.h", "#define OFFSET 100\n")
    lib = load_library([src], cache_dir=tmp_path / "cache")
    assert lib.add(2, 3) == 105


def test_cache_hit_and_keys(tmp_path: Path) -> None:
    src = write(tmp_path, "add.c", "#define OFFSET 0\n" + ADD)
    cache = tmp_path / "cache"
    first = compile_shared([src], cache_dir=cache)
    stamp = first.stat().st_mtime_ns
    assert compile_shared([src], cache_dir=cache) == first  # same inputs: no rebuild
    assert first.stat().st_mtime_ns == stamp
    assert compile_shared([src], ["-O1"], cache_dir=cache) != first  # flags are in the key
    src.write_text("#define OFFSET 1\n" + ADD)
    assert compile_shared([src], cache_dir=cache) != first  # so is the source
    assert not list(cache.glob(".*"))  # no temporary files left behind


def test_header_change_rebuilds(tmp_path: Path) -> None:
    src = write(tmp_path, "add.c", '#include "offset.h"\n' + ADD)
    header = write(tmp_path, "offset.h", "#define OFFSET 1\n")
    cache = tmp_path / "cache"
    before = compile_shared([src], cache_dir=cache)
    header.write_text("#define OFFSET 2\n")
    after = compile_shared([src], cache_dir=cache)
    assert after != before
    assert ctypes.CDLL(str(after)).add(0, 0) == 2


def test_generated_source_text(tmp_path: Path) -> None:
    lib = load_library([Source("gen.c", "#define OFFSET 7\n" + ADD)], cache_dir=tmp_path)
    assert lib.add(1, 1) == 9


def test_compile_error_is_one_line_with_the_location(tmp_path: Path) -> None:
    src = write(tmp_path, "bad.c", "int f(void)\n{\n    return undefined_name;\n}\n")
    with pytest.raises(ToolchainError) as err:
        compile_shared([src], cache_dir=tmp_path / "cache")
    msg = str(err.value)
    assert "\n" not in msg
    assert f"{src}:3:" in msg and "undefined_name" in msg
    assert not list((tmp_path / "cache").glob("*.so"))


def test_warnings_are_errors_with_default_flags(tmp_path: Path) -> None:
    src = write(tmp_path, "warn.c", "int f(int a) { int unused; return a; }\n")
    with pytest.raises(ToolchainError, match="unused"):
        compile_shared([src], cache_dir=tmp_path)


def test_missing_compiler_names_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="apt-get install gcc"):
        find_host_compiler(path=str(tmp_path))  # an empty PATH
    assert not compiler_available(path=str(tmp_path))
    with pytest.raises(ToolchainError, match="no host C compiler"):
        compile_shared([Source("x.c", ADD)], cache_dir=tmp_path, path=str(tmp_path))


def test_explicit_compiler(tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    lib = load_library([Source("a.c", "#define OFFSET 0\n" + ADD)], cc="gcc", cache_dir=tmp_path)
    assert lib.add(20, 22) == 42


def test_unwritable_cache_is_one_line(tmp_path: Path) -> None:
    blocker = write(tmp_path, "file", "")  # a file where the cache directory should be
    with pytest.raises(ToolchainError, match="cannot create the build cache"):
        compile_shared([Source("a.c", "#define OFFSET 0\n" + ADD)], cache_dir=blocker / "sub")
