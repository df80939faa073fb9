"""The generated model library as a firmware team uses it: two MLPerf Tiny models linked into
one ELF by a plain main.c (Makefile and CMake), namespaced symbols, an external arena with
checked init, library-only folders, a host build of the portable kernels, names from hostile
model files sanitised. Outputs are checked against the reference runtime."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import edgenn
from edgenn.backends.cortexm.codegen.names import c_comment, c_identifier
from edgenn.backends.cortexm.emulator import Machine
from edgenn.backends.cortexm.executable import compile_cortexm
from edgenn.backends.cortexm.multi_model import library_machine, write_app
from edgenn.backends.cortexm.targets import get_core
from edgenn.ir import Graph
from edgenn.ir.sample import random_inputs

MLPERF = Path(__file__).resolve().parents[2] / "shared" / "models" / "mlperf_tiny"
KWS = MLPERF / "kws_ref_model.tflite"
AD = MLPERF / "ad01_int8.tflite"
CONV2 = Path(__file__).parent / "fixtures" / "tflite" / "conv2_int8.tflite"
M4 = get_core("cortex-m4")

pytestmark = [
    pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                       reason="arm-none-eabi-gcc is not installed"),
    pytest.mark.skipif(not KWS.exists(), reason="MLPerf Tiny models not found"),
]


def _library(model: Path, name: str, out: Path, **options: Any) -> dict[str, Any]:
    graph = edgenn.load_model(model)
    compile_cortexm(graph, M4, out_dir=out, name=name, library_only=True, **options)
    return dict(json.loads((out / "manifest.json").read_text()))


def _reference(model: Path, x: list[np.ndarray]) -> list[np.ndarray]:
    return list(edgenn.compile_model(edgenn.load_model(model), target="ref").run(*x))


def _run(cmd: list[str], cwd: Path) -> None:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}:\n{res.stdout}\n{res.stderr}"
    assert "warning" not in res.stderr.lower(), res.stderr


def _app_files(app: Path) -> None:
    write_app(app, ["kws", "ad"], M4)  # plain main.c, generic startup and linker script


def _machine(elf: Path, manifest: dict[str, Any]) -> Any:
    """One model of a multi-model ELF: its init, invoke and arena, no layer marks."""
    return library_machine(elf, manifest, M4)


def _check_both_models(elf: Path, manifests: dict[str, dict[str, Any]]) -> None:
    for model, name in ((KWS, "kws"), (AD, "ad")):
        graph = edgenn.load_model(model)
        x = random_inputs(graph, n=2, seed=7)
        want = _reference(model, x)
        machine = _machine(elf, manifests[name])
        for i in range(2):
            got = machine.invoke([x[0][i].tobytes()]).outputs
            t = graph.tensor(graph.outputs[0])
            out = np.frombuffer(got[0], t.dtype.numpy).reshape(t.shape[1:])
            np.testing.assert_array_equal(out, want[0][i], err_msg=f"{name} item {i}")


@pytest.fixture(scope="module")
def two_libraries(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("libs")
    manifests = {"kws": _library(KWS, "kws", root / "kws"), "ad": _library(AD, "ad", root / "ad")}
    return root, manifests


def test_library_folder_is_library_only(two_libraries: tuple[Path, dict[str, Any]]) -> None:
    root, manifests = two_libraries
    kws = root / "kws"
    assert (kws / "libkws.a").stat().st_size > 0
    for absent in ("main.c", "startup.c", "linker.ld", "model.elf", "edgenn_mark.c"):
        assert not (kws / absent).exists(), absent
    header = (kws / "kws.h").read_text()
    for decl in ("int kws_init(void);", "int kws_invoke(void);", "void *kws_input(int index);",
                 "void *kws_output(int index);",
                 "int kws_init_with_arena(uint8_t *arena, size_t bytes);"):
        assert decl in header
    graph = edgenn.load_model(KWS)
    t_in = graph.tensor(graph.inputs[0])
    assert f"#define KWS_ARENA_BYTES {manifests['kws']['arena_bytes']}\n" in header
    assert f"#define KWS_INPUT0_BYTES {t_in.nbytes}\n" in header
    assert f"#define KWS_INPUT0_ZERO_POINT {int(t_in.quant.zero_point[0])}\n" in header
    assert "#define KWS_INPUT0_SHAPE {" + ", ".join(map(str, t_in.shape)) + "}\n" in header
    scale = re.search(r"#define KWS_INPUT0_SCALE (\S+)f\n", header)
    assert scale and np.float32(float(scale.group(1))) == t_in.quant.scale[0]


def test_only_used_runtime_files_are_copied(two_libraries: tuple[Path, dict[str, Any]]) -> None:
    root, _ = two_libraries
    for name in ("kws", "ad"):
        folder = root / name
        included = set()
        for f in folder.glob("*.[ch]"):
            included |= set(re.findall(r'#include "([^"]+)"', f.read_text()))
        sources = set(re.findall(r"\S+\.c", (folder / "CMakeLists.txt").read_text()))
        for f in folder.glob("*.[ch]"):
            assert f.name in included | sources | {f"{name}.h"}, f"{name}: {f.name} unused"


def test_global_symbols_are_namespaced_or_shared_runtime(
        two_libraries: tuple[Path, dict[str, Any]]) -> None:
    root, _ = two_libraries
    for name in ("kws", "ad"):
        folder = root / name
        res = subprocess.run(["arm-none-eabi-nm", "-g", "--defined-only", f"build/{name}.o"],
                             cwd=folder, capture_output=True, text=True, check=True)
        model_syms = [line.split()[-1] for line in res.stdout.splitlines()
                      if line.strip() and not line.endswith(":")]
        assert model_syms and all(s.startswith(f"{name}_") for s in model_syms), model_syms
    # the kernel runtime is identical in both libraries (same files, same text)
    shared = {f.name for f in (root / "kws").glob("*.[ch]")} & \
        {f.name for f in (root / "ad").glob("*.[ch]")}
    assert shared
    for f in shared:
        assert (root / "kws" / f).read_bytes() == (root / "ad" / f).read_bytes(), f


def test_two_models_link_into_one_elf_with_make(two_libraries: tuple[Path, dict[str, Any]],
                                                tmp_path: Path) -> None:
    root, manifests = two_libraries
    for name in ("kws", "ad"):  # the generated Makefile builds each archive on its own
        _run(["make", "-s", f"lib{name}.a"], root / name)
    app = tmp_path / "app"
    _app_files(app)
    flags = [*M4.cflags, "-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
             f"-I{root / 'kws'}", f"-I{root / 'ad'}"]
    _run(["arm-none-eabi-gcc", *flags, "-nostartfiles", "--specs=nano.specs",
          "-Wl,--gc-sections", "-T", "linker.ld", "main.c", "startup.c",
          str(root / "kws" / "libkws.a"), str(root / "ad" / "libad.a"), "-lm",
          "-o", "app.elf"], app)
    _check_both_models(app / "app.elf", manifests)


def test_two_models_with_cmake_add_subdirectory(two_libraries: tuple[Path, dict[str, Any]],
                                                tmp_path: Path) -> None:
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    root, manifests = two_libraries
    app = tmp_path / "app"
    _app_files(app)
    core = " ".join(M4.cflags)
    (app / "toolchain.cmake").write_text(f"""\
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_C_FLAGS_INIT "{core}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-nostartfiles --specs=nano.specs -Wl,--gc-sections")
""")
    (app / "CMakeLists.txt").write_text(f"""\
cmake_minimum_required(VERSION 3.13)
project(two_models C)
add_subdirectory({root / 'kws'} kws)
add_subdirectory({root / 'ad'} ad)
add_executable(app.elf main.c startup.c)
target_link_libraries(app.elf PRIVATE kws ad)
target_link_options(app.elf PRIVATE -T ${{CMAKE_CURRENT_SOURCE_DIR}}/linker.ld)
""")
    _run(["cmake", "-S", ".", "-B", "build", "-DCMAKE_TOOLCHAIN_FILE=toolchain.cmake",
          "-DCMAKE_BUILD_TYPE=Release"], app)
    _run(["cmake", "--build", "build", "-j", "2"], app)
    _check_both_models(app / "build" / "app.elf", manifests)


def test_external_arena_init_is_checked(tmp_path: Path) -> None:
    graph = edgenn.load_model(CONV2)
    exe = compile_cortexm(graph, M4, out_dir=tmp_path, name="conv2", arena="external")
    text = (tmp_path / "conv2.c").read_text()
    assert "conv2_arena_base" in text and "uint8_t conv2_arena[" not in text
    x = random_inputs(graph, n=2, seed=3)
    want = _reference(CONV2, x)
    np.testing.assert_array_equal(exe.run(*x)[0], want[0])
    m = exe.machine
    arena = m.address("edgenn_harness_arena")
    need = int(exe.manifest["arena_bytes"])
    as_int = lambda v: v - (1 << 32) if v >> 31 else v  # noqa: E731
    assert as_int(m.call("conv2_init_with_arena", 0, need).value) == -2  # NULL
    assert as_int(m.call("conv2_init_with_arena", arena, need - 1).value) == -3  # too small
    assert as_int(m.call("conv2_init_with_arena", arena + 4, need).value) == -4  # misaligned
    assert m.call("conv2_init_with_arena", arena, need).value == 0
    np.testing.assert_array_equal(exe.run(*x)[0], want[0])


def test_invoke_before_init_fails_with_status(tmp_path: Path) -> None:
    graph = edgenn.load_model(CONV2)
    exe = compile_cortexm(graph, M4, out_dir=tmp_path, name="conv2")
    manifest = {**exe.manifest, "init_symbol": None}
    machine = Machine(exe.elf, manifest, M4)  # type: ignore[arg-type]
    assert machine.call("conv2_invoke").value == (1 << 32) - 1  # NOT_INITIALISED (-1)
    assert machine.call("conv2_init").value == 0
    assert machine.call("conv2_invoke").value == 0


def test_portable_library_builds_and_runs_on_the_host(tmp_path: Path) -> None:
    """The Cortex-M0+ library (portable C kernels) with the host gcc, C99 pedantic, linked
    with a host main that prints the output: equal to the reference runtime."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    graph = edgenn.load_model(CONV2)
    compile_cortexm(graph, "cortex-m0plus", out_dir=tmp_path, name="conv2", library_only=True,
                    ram_kb=64)
    _run(["make", "-s", "clean"], tmp_path)  # compile left Arm objects here
    _run(["make", "-s", "libconv2.a", "CC=gcc", "AR=ar", "CORE_FLAGS="], tmp_path)
    x = random_inputs(graph, n=1, seed=11)[0]
    t_out = graph.tensor(graph.outputs[0])
    data = ",".join(str(int(v)) for v in x[0].ravel())
    (tmp_path / "host_main.c").write_text(f"""\
#include <stdio.h>
#include <string.h>
#include "conv2.h"

static const int8_t input[CONV2_INPUT0_BYTES] = {{{data}}};

int main(void)
{{
    int i;
    const int8_t *out;
    static uint8_t spare[CONV2_ARENA_BYTES];
    if (conv2_input(0) != NULL || conv2_invoke() != CONV2_ERROR_NOT_INITIALISED) {{
        return 3;  /* nothing before init */
    }}
    if (conv2_init_with_arena(spare, sizeof spare) != CONV2_ERROR_NO_STATIC_ARENA) {{
        return 4;
    }}
    if (conv2_init() != CONV2_OK) {{
        return 1;
    }}
    if (conv2_input(1) != NULL || conv2_output(-1) != NULL || conv2_output(1) != NULL) {{
        return 5;  /* out of range */
    }}
    memcpy(conv2_input(0), input, sizeof input);
    if (conv2_invoke() != CONV2_OK) {{
        return 2;
    }}
    out = (const int8_t *)conv2_output(0);
    for (i = 0; i < CONV2_OUTPUT0_BYTES; i++) {{
        printf("%d\\n", out[i]);
    }}
    return 0;
}}
""")
    _run(["gcc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I.", "host_main.c",
          "libconv2.a", "-lm", "-o", "host_app"], tmp_path)
    res = subprocess.run(["./host_app"], cwd=tmp_path, capture_output=True, text=True,
                         check=True)
    got = np.array([int(v) for v in res.stdout.split()], np.int8).reshape(t_out.shape[1:])
    np.testing.assert_array_equal(got, _reference(CONV2, [x])[0][0])


HOSTILE = 'evil*/ #include "x" \\\n$(shell rm -rf /) ??/ `id`\u202e'


def test_names_from_hostile_models_never_reach_generated_text(tmp_path: Path) -> None:
    graph = edgenn.load_model(CONV2)
    renames = {t: f"{HOSTILE}{i}" for i, t in enumerate(graph.tensors)}
    hostile = Graph(
        name=HOSTILE,
        tensors={renames[k]: type(v)(renames[k], v.shape, v.dtype, v.quant, v.data)
                 for k, v in graph.tensors.items()},
        nodes=[type(n)(HOSTILE + n.name, n.op, tuple(renames[i] if i else i for i in n.inputs),
                       tuple(renames[o] for o in n.outputs), n.attrs) for n in graph.nodes],
        inputs=tuple(renames[i] for i in graph.inputs),
        outputs=tuple(renames[o] for o in graph.outputs),
    )
    name = c_identifier(HOSTILE + ".tflite")
    assert re.fullmatch(r"[a-z][a-z0-9_]*", name)
    exe = compile_cortexm(hostile, M4, out_dir=tmp_path, name=name)
    fragments = ("$(shell", "`id`", "\u202e", '#include "x"', "evil*/")
    for f in ("Makefile", "CMakeLists.txt", f"{name}.c", f"{name}.h", "main.c"):
        text = (tmp_path / f).read_text()
        assert text.isascii(), f
        comments = re.findall(r"/\*(.*?)\*/", text, re.S)
        code = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        for fragment in fragments:  # outside comments: nothing from the model file
            assert fragment not in code, (f, fragment)
        for comment in comments:  # inside: no way out of the comment, no trigraph, no splice
            assert "/*" not in comment and "??" not in comment and "\\" not in comment, f
    x = random_inputs(graph, n=1, seed=5)
    np.testing.assert_array_equal(exe.run(*x)[0], _reference(CONV2, x)[0])


@pytest.mark.parametrize("text, want", [
    ("kws_ref_model.tflite", "kws_ref_model_tflite"), ("9lives", "m_9lives"),
    ("int", "m_int"), ("__x", "x"), ("", "model"), ("Edgenn-Conv", "m_edgenn_conv"),
    ("a" * 80, "a" * 48),
])
def test_c_identifier(text: str, want: str) -> None:
    assert c_identifier(text) == want


def test_c_comment_escapes_delimiters() -> None:
    out = c_comment("a */ b /* c ?? d \\ e\nf")
    assert "*/" not in out and "/*" not in out and "??" not in out and "\\" not in out
    assert "\n" not in out
