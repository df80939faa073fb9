"""The hand-written Cortex-M kernel runtime (edgenn/backends/cortexm/c) is ISO C99 that links
into any vendor firmware: every .c and every header (alone, in a one-line translation unit)
compiles with -std=c99 -pedantic -Wall -Wextra -Werror for each core of targets.py and, through
the plain-C paths, with the host gcc; it defines no reserved identifier (__x, _X, file-scope _x,
nor C++'s x__y); and it builds next to a CMSIS-style header (cmsis_gcc.h's __SMLAD, __SXTB16,
__ROR, __SSAT, __USAT, and the lowercase names CMSIS 6 / newer compilers' arm_acle.h define).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from edgenn.backends.cortexm.codegen.svm_project import SvmConfig, _config_h
from edgenn.backends.cortexm.targets import CORES

ROOT = Path(__file__).resolve().parents[1]
C_DIR = ROOT / "edgenn" / "backends" / "cortexm" / "c"
SVM_C_DIR = ROOT / "edgenn" / "svm" / "c"
STRICT = ("-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror")
ARM_GCC = shutil.which("arm-none-eabi-gcc")
HOST_GCC = shutil.which("gcc")
# why: these harnesses include a generated library's header (features.h of the CNN library);
# their own project tests build them. They are still scanned for reserved identifiers.
NEEDS_GENERATED_LIBRARY = {"features.h"}
# why cortex-m7 is slow-only in the full compile: it builds the same DSP paths as cortex-m4
# (only the FPU differs) and each core's full pass costs ~5 s of CPU
SLOW_FULL_COMPILE = {"cortex-m7"}
COMPILERS = [*(pytest.param(c, marks=pytest.mark.skipif(ARM_GCC is None, reason="no arm gcc"))
               for c in CORES),
             pytest.param("host", marks=pytest.mark.skipif(HOST_GCC is None, reason="no gcc"))]
FULL_COMPILERS = [*(pytest.param(c, marks=[pytest.mark.skipif(ARM_GCC is None, reason="no gcc"),
                                           *([pytest.mark.slow] if c in SLOW_FULL_COMPILE
                                             else [])])
                    for c in CORES),
                  pytest.param("host", marks=pytest.mark.skipif(HOST_GCC is None,
                                                                reason="no gcc"))]


def _command(core: str) -> list[str]:
    if core == "host":
        return [str(HOST_GCC)]
    return [str(ARM_GCC), *CORES[core].cflags]


def _includes(path: Path) -> set[str]:
    return set(re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(), re.M))


def _config_dir(tmp: Path) -> Path:
    """The generated svm_config.h edgenn_svm_firmware.c includes (int8 storage)."""
    cfg = SvmConfig(capacity=16, n_features=8, n_classes=3, storage="int8", scale=0.5)
    (tmp / "svm_config.h").write_text(_config_h(cfg))
    return tmp


def _run(cmd: list[str], cwd: Path) -> str:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    return "" if r.returncode == 0 else f"$ {' '.join(cmd[-3:])}\n{r.stderr[-3000:]}"


@pytest.mark.parametrize("core", FULL_COMPILERS)
def test_runtime_compiles_as_pedantic_c99(core: str, tmp_path: Path) -> None:
    """Every .c at -O2 (asm immediates and flow warnings need the optimiser), every header as
    a one-line TU: no diagnostic at all."""
    inc = ["-I", str(C_DIR), "-I", str(SVM_C_DIR), "-I", str(_config_dir(tmp_path))]
    sources = [p for p in sorted(C_DIR.glob("*.c"))
               if not _includes(p) & NEEDS_GENERATED_LIBRARY]
    units = []
    for h in sorted(C_DIR.glob("*.h")):
        tu = tmp_path / f"tu_{h.stem}.c"
        tu.write_text(f'#include "{h.name}"\n')
        units.append(tu)
    base = [*_command(core), *STRICT, *inc]
    jobs = [[*base, "-O2", "-c", str(p), "-o", str(tmp_path / f"{p.stem}.o")] for p in sources]
    jobs += [[*base, "-O2", "-fsyntax-only", str(tu)] for tu in units]
    with ThreadPoolExecutor(max_workers=4) as pool:
        errors = [e for e in pool.map(lambda c: _run(c, tmp_path), jobs) if e]
    assert len(sources) > 30 and len(units) > 30  # the folder is really there
    assert not errors, f"{len(errors)} of {len(jobs)} translation units fail on {core}:\n" + \
        "\n".join(errors[:5])


# -- reserved identifiers --------------------------------------------------------------------

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
# after these words an identifier is used, not declared
_NOT_A_TYPE = {"return", "sizeof", "case", "goto", "else", "do", "defined", "if", "while"}
# GNU keywords: the compiler's own, never declared by the runtime
_KEYWORDS = {"__attribute__", "__asm__", "__volatile__", "__inline__", "__restrict__",
             "__extension__", "__typeof__", "__alignof__"}


def _blank(m: re.Match[str]) -> str:
    """Blank out a comment or a literal, keeping newlines (line numbers stay right)."""
    return re.sub(r"[^\n]", " ", m.group(0))


def _reserved(name: str, file_scope: bool) -> bool:
    """C99 7.1.3: __x and _X everywhere, _x at file scope; C++ also reserves any x__y (the
    headers may be included from C++ firmware)."""
    return (name.startswith("__") or re.match(r"_[A-Z]", name) is not None or "__" in name
            or (file_scope and name.startswith("_")))


def reserved_definitions(path: Path) -> list[str]:
    """file:line: name for each macro, guard, typedef, tag, function, variable or parameter
    the file declares with a reserved name (uses of __attribute__, __asm__, ACLE intrinsics or
    predefined macros are not declarations)."""
    text = _STRING.sub(_blank, _COMMENT.sub(_blank, path.read_text()))
    depth_at = []
    depth = 0
    for ch in text:
        depth_at.append(depth)
        depth += {"{": 1, "}": -1}.get(ch, 0)
    found = []
    for m in _IDENT.finditer(text):
        name = m.group(0)
        if name in _KEYWORDS or not _reserved(name, depth_at[m.start()] == 0):
            continue
        before = text[:m.start()]
        directive = re.search(r"#\s*(define|ifndef|undef)\s+$", before)
        tag = re.search(r"\b(struct|union|enum)\s+$", before)
        # a declarator: type words (and stars) since the last ; { } ( ) , or directive, then the
        # name, then ( [ ; = , or ) -- `a * f(` in an expression looks the same, but the
        # runtime has no reserved-name calls after a multiplication
        prefix = re.split(r"[;{}(),]|^[ \t]*#.*$", before, flags=re.M)[-1]
        words = re.findall(r"\w+", prefix)
        declarator = (re.fullmatch(r"\s*(\w+[\s*]+)+", prefix) is not None
                      and not set(words) & _NOT_A_TYPE
                      and re.match(r"\s*[(\[;=,)]", text[m.end():]) is not None)
        if directive or tag or declarator:
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{path.name}:{line}: {name}")
    return found


def test_runtime_defines_no_reserved_identifier() -> None:
    files = sorted([*C_DIR.glob("*.c"), *C_DIR.glob("*.h")])
    bad = [d for f in files for d in reserved_definitions(f)]
    assert not bad, "reserved identifiers defined:\n" + "\n".join(bad)


def test_reserved_scan_finds_definitions(tmp_path: Path) -> None:
    """The scan itself: each kind of declaration is found, uses are not."""
    src = tmp_path / "x.h"
    src.write_text(
        "#ifndef _X_H\n#define _X_H\n#define __ssat(a, b) (a)\n"
        "#include <x.h>\nstatic inline int __smlad(int a, int b) { return __builtin_add(a, b); }\n"
        "typedef int _mytype;\nstruct __tag { int a; };\nstatic int _counter = 0;\n"
        "int edgenn__pair(int __v);\n"
        "int use(int a) { int _local = a; (void)__ssub8(a, a); return __smlad(_local, 1) "
        "+ __ARM_ARCH; }\n"
        "__attribute__((noinline)) void f(void) { __asm__(\"nop\"); }\n"
        "/* __commented(int) */\n#endif\n")
    names = [d.rsplit(" ", 1)[1] for d in reserved_definitions(src)]
    assert names == ["_X_H", "_X_H", "__ssat", "__smlad", "_mytype", "__tag", "_counter",
                     "edgenn__pair", "__v"]


# -- next to CMSIS -------------------------------------------------------------------------

# Modelled on CMSIS 5 cmsis_gcc.h (uppercase intrinsics as forced-inline functions and
# statement-expression macros), plus what CMSIS 6's cmsis_gcc.h and newer compilers'
# arm_acle.h provide under the lowercase ACLE names (e.g. __ror on every core, and plain-C
# twins of the DSP intrinsics where a core lacks them).
CMSIS_STANDIN = r"""
#ifndef CMSIS_STANDIN_H
#define CMSIS_STANDIN_H
#include <stdint.h>
#define __ASM __asm__
#define __STATIC_FORCEINLINE __attribute__((always_inline)) static inline
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
__STATIC_FORCEINLINE uint32_t __SMLAD(uint32_t op1, uint32_t op2, uint32_t op3)
{
    uint32_t result;
    __ASM volatile("smlad %0, %1, %2, %3" : "=r"(result) : "r"(op1), "r"(op2), "r"(op3));
    return result;
}
__STATIC_FORCEINLINE uint32_t __SXTB16(uint32_t op1)
{
    uint32_t result;
    __ASM volatile("sxtb16 %0, %1" : "=r"(result) : "r"(op1));
    return result;
}
#define __SSAT(ARG1, ARG2) __extension__({ int32_t __RES, __ARG1 = (ARG1); \
    __ASM volatile("ssat %0, %1, %2" : "=r"(__RES) : "I"(ARG2), "r"(__ARG1) : "cc"); __RES; })
#define __USAT(ARG1, ARG2) __extension__({ uint32_t __RES, __ARG1 = (ARG1); \
    __ASM volatile("usat %0, %1, %2" : "=r"(__RES) : "I"(ARG2), "r"(__ARG1) : "cc"); __RES; })
#else
__STATIC_FORCEINLINE uint32_t __SMLAD(uint32_t x, uint32_t y, uint32_t sum)
{
    return sum + (uint32_t)((int16_t)x * (int16_t)y)
        + (uint32_t)((int16_t)(x >> 16) * (int16_t)(y >> 16));
}
__STATIC_FORCEINLINE uint32_t __SXTB16(uint32_t x)
{
    return ((uint32_t)(int32_t)(int8_t)x & 0xFFFFu) | ((uint32_t)(int8_t)(x >> 16) << 16);
}
__STATIC_FORCEINLINE int32_t __SSAT(int32_t val, uint32_t sat)
{
    int32_t max = (int32_t)((1U << (sat - 1U)) - 1U), min = -1 - max;
    return val > max ? max : (val < min ? min : val);
}
__STATIC_FORCEINLINE uint32_t __USAT(int32_t val, uint32_t sat)
{
    uint32_t max = (1U << sat) - 1U;
    return val > (int32_t)max ? max : (val < 0 ? 0U : (uint32_t)val);
}
__STATIC_FORCEINLINE int32_t __smlad(uint32_t x, uint32_t y, int32_t sum)
{
    return (int32_t)__SMLAD(x, y, (uint32_t)sum);
}
__STATIC_FORCEINLINE uint32_t __sxtb16(uint32_t x) { return __SXTB16(x); }
#define __ssat(x, sat) __SSAT((x), (sat))
#define __usat(x, sat) __USAT((x), (sat))
#endif
__STATIC_FORCEINLINE uint32_t __ROR(uint32_t op1, uint32_t op2)
{
    op2 %= 32U;
    return op2 == 0U ? op1 : (op1 >> op2) | (op1 << (32U - op2));
}
__STATIC_FORCEINLINE uint32_t __ror(uint32_t x, uint32_t y) { return __ROR(x, y); }
#endif
"""

USES = r"""
int32_t cmsis_and_edgenn(uint32_t a, uint32_t b, int32_t acc);
int32_t cmsis_and_edgenn(uint32_t a, uint32_t b, int32_t acc)
{
    acc = (int32_t)__SMLAD(__SXTB16(a), b, (uint32_t)acc) + __SSAT(acc, 8)
        + (int32_t)__USAT(acc, 8) + (int32_t)__ROR(a, 3);
    acc = edgenn_smlad(edgenn_sxtb16(a), b, acc) + edgenn_ssat(acc, 8)
        + (int32_t)edgenn_usat(acc, 8) + (int32_t)edgenn_ror(a, 3) + edgenn_smuad(a, b)
        + edgenn_smladx(a, b, acc) + (int32_t)edgenn_sxtab16(a, b)
        + (int32_t)edgenn_sxtab16_ror8(a, b) + (int32_t)edgenn_sxtb16_ror8(a)
        + edgenn_smlabb((int32_t)a, (int32_t)b, acc) + edgenn_smlatt((int32_t)a, (int32_t)b, acc)
        + edgenn_smlabt((int32_t)a, (int32_t)b, acc) + edgenn_smlatb((int32_t)a, (int32_t)b, acc)
        + (int32_t)edgenn_qadd16(a, b) + (int32_t)edgenn_sadd16(a, b)
        + (int32_t)edgenn_ssub16(a, b) + (int32_t)edgenn_pkhbt(a, b, 16)
        + (int32_t)edgenn_pkhtb(a, b, 16) + edgenn_smmulr((int32_t)a, (int32_t)b)
        + edgenn_smmla((int32_t)a, (int32_t)b, acc) + (int32_t)edgenn_max_s8x4(a, b);
    return acc + (int32_t)edgenn_smlald(a, b, (int64_t)acc);
}
"""


@pytest.mark.parametrize("core", COMPILERS)
@pytest.mark.parametrize("cmsis_first", [True, False], ids=["cmsis-first", "edgenn-first"])
def test_runtime_builds_next_to_cmsis(core: str, cmsis_first: bool, tmp_path: Path) -> None:
    """edgenn_acle.h and every header with a CMSIS-style header in one TU, either order."""
    (tmp_path / "cmsis_standin.h").write_text(CMSIS_STANDIN)
    ours = [f'#include "{h.name}"' for h in sorted(C_DIR.glob("*.h"))]
    ours.remove('#include "edgenn_acle.h"')
    ours.insert(0, '#include "edgenn_acle.h"')
    cmsis = ['#include "cmsis_standin.h"']
    lines = [*cmsis, *ours] if cmsis_first else [*ours, *cmsis]
    tu = tmp_path / "firmware.c"
    tu.write_text("\n".join(lines) + "\n" + USES)
    err = _run([*_command(core), *STRICT, "-O2", "-I", str(C_DIR), "-I", str(tmp_path),
                "-c", str(tu), "-o", str(tmp_path / "firmware.o")], tmp_path)
    assert not err, err
