"""Concat of whole words, generated for the layer's shape (any core, any element type).

The portable Concat runs one generic strided copy per input, whose per-row loop
and odometer cost ~20 cycles for each slab row; a channel concat of small slabs (the usual
case: NHWC, the last axis) is mostly that overhead. When no input is rescaled and every
input's slab (its elements from the axis on) is a whole number of words, this kernel emits
one loop over the outer rows that moves each input's slab with straight word loads and
stores (slabs of up to UNROLL words; longer ones in a loop of 4 words). Bytes move
unchanged, as TFLite Micro's concatenation.
"""

from __future__ import annotations

import hashlib

import numpy as np

from edgenn.backends.cortexm.ccall import OUT0, Buf, Cast, CCall, Generated
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.movement import TYPES, same_types
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node
from edgenn.prepared.movement import prepare_concat

UNROLL = 16  # words of one slab moved by straight-line code


def _slab_words(node: Node, graph: Graph) -> list[int] | None:
    p = prepare_concat(node, graph)
    if any(r is not None for r in p.rescale):
        return None
    y = graph.tensor(node.outputs[0])
    words = []
    for name in node.inputs:
        t = graph.tensor(name)
        if t.is_const:
            return None
        nbytes = int(np.prod(t.shape[p.axis:], dtype=np.int64)) * t.dtype.itemsize
        if nbytes % 4:
            return None
        words.append(nbytes // 4)
    outer = int(np.prod(y.shape[:p.axis], dtype=np.int64))
    return words if outer >= 1 and sum(words) * outer * 4 == y.nbytes else None


def _move(i: int, n: int) -> list[str]:
    if n <= UNROLL:
        return [f"        o[{k}] = s{i}[{k}];" for k in range(n)] + \
               [f"        s{i} += {n}; o += {n};"]
    body = [f"        for (int k = 0; k < {n - n % 4}; k += 4, s{i} += 4, o += 4) {{",
            *(f"            o[{k}] = s{i}[{k}];" for k in range(4)), "        }"]
    return body + [f"        o[{k}] = s{i}[{k}];" for k in range(n % 4)] + \
        ([f"        s{i} += {n % 4}; o += {n % 4};"] if n % 4 else [])


def generate(words: list[int], outer: int) -> str:
    params = ", ".join(f"const uint32_t *__restrict s{i}" for i in range(len(words)))
    body = [line for i, n in enumerate(words) for line in _move(i, n)]
    return (f"/* concat_words: {outer} rows of {' + '.join(map(str, words))} words */\n"
            f"static void @P@_concat({params}, uint32_t *__restrict o)\n{{\n"
            f"    for (int r = 0; r < {outer}; r++) {{\n" + "\n".join(body) + "\n    }\n}\n")


class ConcatWords:
    """Concat whose input slabs are whole words: one generated row loop."""

    op = "Concat"
    priority = 10  # above the portable Concat (0)
    name = "edgenn_concat_words"
    types = TYPES

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return same_types(node, graph) and _slab_words(node, graph) is not None

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        words = _slab_words(node, graph)
        assert words is not None
        outer = graph.tensor(node.outputs[0]).nbytes // (4 * sum(words))
        body = generate(words, outer)
        name = "ccw_" + hashlib.sha1(body.encode()).hexdigest()[:12]
        guard = name.upper() + "_DEFINED"
        code = f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}#endif\n"
        ins = [Cast("const uint32_t *", Cast("const void *", Buf("in", i)))
               for i in range(len(words))]
        call = CCall(Generated(f"{name}_concat", self.name, per_layer=False),
                     (*ins, Cast("uint32_t *", Cast("void *", OUT0))))
        return KernelCall(call, (),
                          code=code,
                          comment=f"{outer} rows of {' + '.join(map(str, words))} words")


register_kernel(ConcatWords())
