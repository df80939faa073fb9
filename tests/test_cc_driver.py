"""The one compiler driver (edgenn.cc.driver): first error line, full log, timeout, missing tool."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from edgenn.backends.cortexm.build import find_compiler
from edgenn.cc import CompileError, compile_shared, find_host_compiler, run_tool
from edgenn.errors import ToolchainError

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")

BAD = "int f(void)\n{\n    return 1 +;\n}\nint g(void) { return undefined_name; }\n"


@needs_gcc
def test_syntax_error_is_one_line_with_the_first_error_and_the_log(tmp_path: Path) -> None:
    (tmp_path / "bad.c").write_text(BAD)
    with pytest.raises(CompileError) as err:
        run_tool(["gcc", "-c", "bad.c", "-o", "bad.o"], "compiling bad.c", cwd=tmp_path)
    msg = str(err.value)
    assert "\n" not in msg
    # the first error (line 3), with the file made absolute against the working folder
    assert msg.startswith(f"compiling bad.c failed: {tmp_path / 'bad.c'}:3:")
    assert "error" in msg and "undefined_name" not in msg
    assert "undefined_name" in err.value.log  # the second error is in the whole log
    assert err.value.command[0] == "gcc"


@needs_gcc
def test_host_build_error_is_a_compile_error(tmp_path: Path) -> None:
    src = tmp_path / "bad.c"
    src.write_text(BAD)
    with pytest.raises(CompileError) as err:
        compile_shared([src], cache_dir=tmp_path / "cache")
    assert "\n" not in str(err.value) and f"{src}:3:" in str(err.value)
    assert not list((tmp_path / "cache").glob("*.so"))


@needs_gcc
def test_host_build_past_its_timeout_is_one_line(tmp_path: Path) -> None:
    src = tmp_path / "ok.c"
    src.write_text("int f(int a) { return a; }\n")
    with pytest.raises(CompileError) as err:
        compile_shared([src], cache_dir=tmp_path / "cache", timeout=0.001)
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("compiling ok.c timed out after 0.001 s")
    assert not list((tmp_path / "cache").glob("*.so"))
    assert not list((tmp_path / "cache").glob(".*"))  # no half-written object left


def test_timeout_kills_the_tool_and_its_children() -> None:
    # why a shell with a child: the child holds the output pipes; killing only the shell
    # would leave the driver waiting for the child's 30 s
    start = time.monotonic()
    with pytest.raises(CompileError, match=r"^linking x timed out after 0.2 s"):
        run_tool(["sh", "-c", "sleep 30; true"], "linking x", timeout=0.2)
    assert time.monotonic() - start < 10


def test_missing_compilers_name_the_compiler_and_the_package(tmp_path: Path) -> None:
    empty = str(tmp_path)  # a PATH without any compiler
    cases = [(lambda: find_host_compiler(path=empty), "cc, gcc, clang", "apt-get install gcc"),
             (lambda: find_compiler(empty), "arm-none-eabi-gcc",
              "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi")]
    for find, names, package in cases:
        with pytest.raises(ToolchainError) as err:
            find()
        msg = str(err.value)
        assert "\n" not in msg and names in msg and package in msg, msg


def test_a_tool_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match=r"^compiling a.c: cannot run .*nothing-here"):
        run_tool([str(tmp_path / "nothing-here"), "a.c"], "compiling a.c")
