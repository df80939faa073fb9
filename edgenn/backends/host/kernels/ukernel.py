"""C for the GEMM micro-kernels: a register tile of partial sums, a k loop of FMAs, a store.

Four ways to feed A (the activations) to the same tile:

* ``packed``: an interleaved panel ``a[k][mr]`` (im2col / GEMM / Winograd with packing);
* ``strided``: ``mr`` rows a compile-time stride ``lda`` apart (hybrid tiles on im2col rows,
  GEMM rows in place, Winograd rows): one pointer, every row at a constant offset;
* ``rows``: ``mr`` row pointers per segment, ``nseg`` segments of ``seglen`` values each
  (indirect convolution taps, direct convolution tiles touching the padding);
* ``direct``: one base pointer, rows a constant stride apart, the (ky, kx, ci) loop inside:
  every address is base + a compile-time offset (the direct convolution's interior).

B is always a packed panel ``b[k][nr]`` (``nr`` floats per k, zero-padded past the last
output channel). The epilogue (``mode`` bit 1: accumulate into C, else start from the bias;
bit 2: apply the fused activation) is outside the k loop. Each function is generated for an
exact number of rows and valid columns, so tails compute nothing that is thrown away except
the zero padding of a partial vector.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from edgenn.backends.c_literals import c_float
from edgenn.backends.host.kernels.cwriter import CWriter, vec
from edgenn.backends.host.kernels.tiles import Tile

MODE_ACCUMULATE = 1
MODE_ACTIVATE = 2


@dataclass(frozen=True)
class DirectGeometry:
    """What the direct interior kernel bakes in: the input row width, channels, strides."""

    w: int
    cin: int
    kh: int
    kw: int
    sw: int


@dataclass(frozen=True)
class KernelSpec:
    """One generated micro-kernel function."""

    name: str
    tile: Tile
    rows: int  # output rows computed (<= tile.mr)
    cols: int  # valid output columns (<= tile.nr)
    ldc: int  # C row stride in floats
    feed: str  # "packed" | "strided" | "rows" | "direct"
    lo: float = -math.inf
    hi: float = math.inf
    direct: DirectGeometry | None = None
    lda: int = 0  # row stride of the "strided" feed


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def emit_kernel(out: CWriter, spec: KernelSpec) -> None:
    """Append the C function for ``spec``."""
    v = vec(spec.tile.lanes)
    args = {
        "packed": "int kc, const float *EV_RESTRICT a, ",
        "strided": "int kc, const float *EV_RESTRICT a, ",
        "rows": "int nseg, int seglen, const float *const *EV_RESTRICT ptrs, ",
        "direct": "const float *EV_RESTRICT base, ",
    }[spec.feed]
    # why noinline: inlined into a driver loop, the epilogue's constants (clamp bounds) get
    # hoisted out of that loop and occupy registers through the k loop, spilling partial sums
    out("__attribute__((noinline))")
    with out.block(f"static void {spec.name}({args}const float *EV_RESTRICT b, "
                   "float *EV_RESTRICT c, const float *EV_RESTRICT bias, int mode)"):
        accs = _accumulators(spec)
        sets = _sets(spec, accs)
        for u in range(sets):
            for row in accs:
                out(f"{v} " + ", ".join(f"{_in_set(n, u)} = {{0}}" for n in row) + ";")
        if spec.feed == "packed":
            _packed_loop(out, spec, accs, sets)
        elif spec.feed == "strided":
            _strided_loop(out, spec, accs, sets)
        elif spec.feed == "rows":
            _rows_loop(out, spec, accs, sets)
        else:
            _direct_loop(out, spec, accs, sets)
        for u in range(1, sets):  # fold the extra chains back
            out(" ".join(f"{n} += {_in_set(n, u)};" for row in accs for n in row))
        if spec.tile.along_m:
            _store_along_m(out, spec, accs)
        else:
            _store_along_n(out, spec, accs)


def _accumulators(spec: KernelSpec) -> list[list[str]]:
    """Along N: ``[row][n-vector]``; along M: ``[column][m-vector]``."""
    t = spec.tile
    if t.along_m:
        return [[f"c{n}_{j}" for j in range(_ceil_div(spec.rows, t.lanes))]
                for n in range(spec.cols)]
    return [[f"c{r}_{j}" for j in range(_ceil_div(spec.cols, t.lanes))]
            for r in range(spec.rows)]


#: Independent FMA chains that hide the FMA latency (2 pipes x 4 cycles on current x86).
CHAINS = 8


def _sets(spec: KernelSpec, accs: list[list[str]]) -> int:
    """Accumulator sets: a small tile (a row tail, a GEMV, ``8x6``) has too few chains to
    keep the FMA pipes busy, so successive k steps go to separate sets, summed at the end."""
    count = sum(len(row) for row in accs)
    if spec.tile.lanes == 1 or count >= CHAINS:
        return 1
    operands = len(accs[0]) + 1  # one row of B vectors (or A vectors) and a broadcast
    sets = min(4, _ceil_div(CHAINS, count))
    while sets > 1 and sets * count + operands > spec.tile.registers:
        sets -= 1
    return sets


def _in_set(name: str, u: int) -> str:
    return name if u == 0 else f"{name}_s{u}"


def _split_loop(out: CWriter, bound: str, sets: int, step: Callable[[str, int], None],
                advance: Callable[[int], None]) -> None:
    """``for k < bound``: ``step(k_expr, set)`` then ``advance(steps)`` moves the packed
    pointers; with several sets, ``sets`` steps per trip, each into its own set.

    why pointer increments: ``k * stride`` indexing lets the compiler assume (and warn
    about) overflow for bounds it cannot see.
    """
    if sets == 1:
        out("#pragma GCC unroll 4")
        with out.block(f"for (int k = 0; k < {bound}; ++k)"):
            step("k", 0)
            advance(1)
        return
    out("int k = 0;")
    with out.block(f"for (; k + {sets} <= {bound}; k += {sets})"):
        for u in range(sets):
            step(f"k + {u}" if u else "k", u)
        advance(sets)
    with out.block(f"for (; k < {bound}; ++k)"):
        step("k", 0)
        advance(1)


def _fma_step(out: CWriter, spec: KernelSpec, accs: list[list[str]], a_of: list[str],
              b: str, u: int) -> None:
    """One k step along N: B vectors from ``b``, one broadcast per row from ``a_of[r]``."""
    t = spec.tile
    v, lanes = vec(t.lanes), t.lanes
    nvec = len(accs[0])
    with out.block(""):
        out(f"const {v} " + ", ".join(f"b{j} = LD{lanes}({b} + {j * lanes})"
                                      for j in range(nvec)) + ";")
        for r, row in enumerate(accs):
            out(f"{{ const {v} x = BC{lanes}({a_of[r]}); "
                + " ".join(f"FMA({_in_set(acc, u)}, x, b{j});" for j, acc in enumerate(row))
                + " }")


def _packed_loop(out: CWriter, spec: KernelSpec, accs: list[list[str]], sets: int) -> None:
    t = spec.tile

    def step(k: str, u: int) -> None:
        if not t.along_m:
            _fma_step(out, spec, accs, [f"a[{u * t.mr + r}]" for r in range(spec.rows)],
                      f"b + {u * t.nr}", u)
            return
        v, lanes = vec(t.lanes), t.lanes
        with out.block(""):
            out(f"const {v} " + ", ".join(f"a{j} = LD{lanes}(a + {u * t.mr + j * lanes})"
                                          for j in range(len(accs[0]))) + ";")
            for n, row in enumerate(accs):
                out(f"{{ const {v} y = BC{lanes}(b[{u * t.nr + n}]); "
                    + " ".join(f"FMA({_in_set(acc, u)}, a{j}, y);" for j, acc in enumerate(row))
                    + " }")

    _split_loop(out, "kc", sets, step, lambda n: out(f"a += {n * t.mr};", f"b += {n * t.nr};"))


def _strided_loop(out: CWriter, spec: KernelSpec, accs: list[list[str]], sets: int) -> None:
    nr = spec.tile.nr

    def step(k: str, u: int) -> None:
        _fma_step(out, spec, accs, [f"a[{r * spec.lda} + {k}]" for r in range(spec.rows)],
                  f"b + {u * nr}", u)

    _split_loop(out, "kc", sets, step, lambda n: out(f"b += {n * nr};"))


def _rows_loop(out: CWriter, spec: KernelSpec, accs: list[list[str]], sets: int) -> None:
    t = spec.tile

    def step(k: str, u: int) -> None:
        _fma_step(out, spec, accs, [f"a{r}[{k}]" for r in range(spec.rows)],
                  f"b + {u * t.nr}", u)

    with out.block("for (int s = 0; s < nseg; ++s)"):
        out(*(f"const float *EV_RESTRICT a{r} = ptrs[s * {t.mr} + {r}];"
              for r in range(spec.rows)))
        _split_loop(out, "seglen", sets, step, lambda n: out(f"b += {n * t.nr};"))


def _direct_loop(out: CWriter, spec: KernelSpec, accs: list[list[str]], sets: int) -> None:
    g = spec.direct
    assert g is not None
    t = spec.tile
    row = g.sw * g.cin  # why constant: the compiler folds every row offset into the address

    def step(k: str, u: int) -> None:
        _fma_step(out, spec, accs, [f"p[{r * row} + {k}]" for r in range(spec.rows)],
                  f"b + {u * t.nr}", u)

    # why one loop per window row: its taps are neighbouring pixels, so their KW * Cin
    # values are contiguous and in the order B was packed (ky, kx, ci)
    with out.block(f"for (int ky = 0; ky < {g.kh}; ++ky)"):
        out(f"const float *EV_RESTRICT p = base + ky * {g.w * g.cin};")
        _split_loop(out, str(g.kw * g.cin), sets, step, lambda n: out(f"b += {n * t.nr};"))


def _clamp_lines(out: CWriter, spec: KernelSpec, var: str, lanes: int) -> None:
    # why the bound first (here, in depthwise.py and winograd.py): MAX(a, b) is
    # ``a > b ? a : b``, so MAX(lo, v) keeps a NaN v as TFLite's std::max(v, lo) does
    if math.isinf(spec.lo) and math.isinf(spec.hi):
        return
    parts = []
    if not math.isinf(spec.lo):
        parts.append(f"{var} = MAX{lanes}(BC{lanes}({c_float(spec.lo)}), {var});")
    if not math.isinf(spec.hi):
        parts.append(f"{var} = MIN{lanes}(BC{lanes}({c_float(spec.hi)}), {var});")
    out(f"if (mode & {MODE_ACTIVATE}) {{ " + " ".join(parts) + " }")


def _store_along_n(out: CWriter, spec: KernelSpec, accs: list[list[str]]) -> None:
    t = spec.tile
    v, lanes = vec(t.lanes), t.lanes
    for r, row in enumerate(accs):
        with out.block(""):
            out(f"float *EV_RESTRICT cr = c + {r * spec.ldc};")
            for j, acc in enumerate(row):
                n0 = j * lanes
                valid = min(lanes, spec.cols - n0)
                if valid == lanes:
                    out(f"{acc} += (mode & {MODE_ACCUMULATE}) ? LD{lanes}(cr + {n0}) "
                        f": LD{lanes}(bias + {n0});")
                    _clamp_lines(out, spec, acc, lanes)
                    out(f"ST{lanes}(cr + {n0}, {acc});")
                else:  # a partial vector: spill it and finish the valid lanes one by one
                    with out.block(""):
                        out(f"float tmp[{lanes}];", f"memcpy(tmp, &{acc}, sizeof({v}));")
                        with out.block(f"for (int q = 0; q < {valid}; ++q)"):
                            out(f"float s = tmp[q] + ((mode & {MODE_ACCUMULATE}) "
                                f"? cr[{n0} + q] : bias[{n0} + q]);")
                            _clamp_lines(out, spec, "s", 1)
                            out(f"cr[{n0} + q] = s;")


def _store_along_m(out: CWriter, spec: KernelSpec, accs: list[list[str]]) -> None:
    """Accumulators hold columns, C wants rows: 8x8 register transposes when the tile is
    one 8-wide vector tall, else through a stack tile."""
    t = spec.tile
    if t.lanes == 8 and t.mr == 8:
        _store_transposed8(out, spec, accs)
        return
    v, lanes = vec(t.lanes), t.lanes
    mpad = len(accs[0]) * lanes
    out(f"float tile[{spec.cols * mpad}];")
    for n, row in enumerate(accs):
        for j, acc in enumerate(row):
            out(f"memcpy(tile + {n * mpad + j * lanes}, &{acc}, sizeof({v}));")
    with out.block(f"for (int r = 0; r < {spec.rows}; ++r)"):
        out(f"float *EV_RESTRICT cr = c + r * {spec.ldc};")
        with out.block(f"for (int n = 0; n < {spec.cols}; ++n)"):
            out(f"float s = tile[n * {mpad} + r] + ((mode & {MODE_ACCUMULATE}) ? cr[n] "
                ": bias[n]);")
            _clamp_lines(out, spec, "s", 1)
            out("cr[n] = s;")


def _store_transposed8(out: CWriter, spec: KernelSpec, accs: list[list[str]]) -> None:
    for g0 in range(0, spec.cols, 8):
        width = min(8, spec.cols - g0)
        with out.block(""):
            vecs = [accs[g0 + j][0] if j < width else "(ev8){0}" for j in range(8)]
            out(f"ev8 tr[8] = {{{', '.join(vecs)}}};", "ev_transpose8(tr);")
            for r in range(spec.rows):
                with out.block(""):
                    out(f"float *EV_RESTRICT cr = c + {r * spec.ldc + g0};")
                    if width == 8:
                        out(f"ev8 v = tr[{r}];",
                            f"v += (mode & {MODE_ACCUMULATE}) ? LD8(cr) : LD8(bias + {g0});")
                        _clamp_lines(out, spec, "v", 8)
                        out("ST8(cr, v);")
                    elif width == 4:
                        out(f"ev4 v = EV_LO4(tr[{r}]);",
                            f"v += (mode & {MODE_ACCUMULATE}) ? LD4(cr) : LD4(bias + {g0});")
                        _clamp_lines(out, spec, "v", 4)
                        out("ST4(cr, v);")
                    else:
                        out("float q[8];", f"memcpy(q, &tr[{r}], sizeof q);")
                        with out.block(f"for (int n = 0; n < {width}; ++n)"):
                            out(f"float s = q[n] + ((mode & {MODE_ACCUMULATE}) ? cr[n] "
                                f": bias[{g0} + n]);")
                            _clamp_lines(out, spec, "s", 1)
                            out("cr[n] = s;")
