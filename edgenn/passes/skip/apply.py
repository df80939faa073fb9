"""The semantics of skipping: ``apply_skip(graph, config)`` rewrites the graph without the
skipped blocks. Every backend must be bit-exact with the reference runtime on that graph.

A skipped block's nodes (F and the Add) are removed and its output tensor (same name, shape,
dtype and quantization) is produced by ONE node reading the block input ``x``:

================================  ==========================================================
the block's Add                   replacement node
================================  ==========================================================
no fused activation, x and the    ``Reshape`` to the same shape: a pure alias, no arithmetic
output quantized alike (or float)
no fused activation, int8 with    ``Quantize`` (int8 -> int8): TFLM's Requantize
other parameters                  ``MBQM(x - zp_x, s_x / s_out) + zp_out``, clamped to int8
fused ReLU / ReLU6 /              ``Relu`` / ``Relu6`` / ``Clip(-1, 1)`` with the Add's output
RELU_N1_TO_1                      parameters: the same Requantize, then clamped to the Add's
                                  own activation range ``CalculateActivationRangeQuantized``
                                  (TFLM ReluQuantized); for float, ``activation(x)``
================================  ==========================================================

So skipping a block ``y = act(x + F(x))`` gives ``act(x)`` in ``y``'s quantization: the
block's value if F(x) were zero, rounded once (a requantize) instead of through the Add's
two-stage fixed-point arithmetic.
The clamp is dropped (alias or plain Quantize) when it provably changes nothing: ``x`` is
produced by a node whose fused (or own) activation range, in the same quantization, lies
inside the Add's (a ReLU'd ``x`` into a ReLU'd Add with shared parameters is an alias), or
the Add's activation is ReLU and ``x`` is ReLU'd / ReLU6'd (Requantize is monotone and maps
``zp_x`` to ``zp_out``, so nothing falls below the output's zero).
"""

from __future__ import annotations

from collections.abc import Iterable

from edgenn.arith.fixed_point import (
    activation_range_float,
    activation_range_quantized,
)
from edgenn.errors import EdgennError
from edgenn.ir import Activation, DType, Graph, Node
from edgenn.passes.skip.blocks import Block, find_blocks
from edgenn.passes.skip.config import SkipConfig, format_skip

SKIP_METADATA_KEY = "edgenn.skip"

_CLAMP_OPS: dict[Activation, tuple[str, dict[str, float]]] = {
    Activation.RELU: ("Relu", {}),
    Activation.RELU6: ("Relu6", {}),
    Activation.RELU_N1_TO_1: ("Clip", {"min": -1.0, "max": 1.0}),
}
_OP_ACTIVATION = {"Relu": Activation.RELU, "Relu6": Activation.RELU6}


def apply_skip(graph: Graph, config: SkipConfig | Iterable[str],
               blocks: list[Block] | None = None, validate: bool = True) -> Graph:
    """``graph`` with the blocks named in ``config`` skipped; validated.

    ``blocks`` may pass ``find_blocks(graph)`` when the caller already has it. An empty
    config returns ``graph`` itself. A block nested inside another skipped block needs no
    replacement of its own (the outer one removes it). ``validate=False`` leaves out
    ``Graph.validate`` (shape inference of every node and a scan of every constant): for
    callers that only read sizes and lifetimes of a graph derived from a valid one, where it
    is three quarters of the cost of a plan (``config_peak``).
    """
    config = frozenset(config)
    if not config:
        return graph
    blocks = find_blocks(graph) if blocks is None else blocks
    by_name = {b.name: b for b in blocks}
    unknown = sorted(config - set(by_name))
    if unknown:
        known = ", ".join(by_name) or "none"
        raise EdgennError(f"model {graph.name!r}: cannot skip unknown block(s) "
                          f"{', '.join(unknown)} (blocks: {known})")
    skipped = [by_name[n] for n in config]
    removed = {name for b in skipped for name in b.nodes}
    replacements: dict[str, Node] = {}  # Add name -> the node standing in for its block
    taken = {n.name for n in graph.nodes}
    for block in skipped:
        if any(block.add in other.nodes for other in skipped if other is not block):
            continue  # nested in a skipped block: removed with it
        node = skip_node(graph, block, _unique(f"{block.name}_skip", taken))
        replacements[block.add] = node
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.name in replacements:
            nodes.append(replacements[node.name])
        elif node.name not in removed:
            nodes.append(node)
    metadata = {**graph.metadata, SKIP_METADATA_KEY: format_skip(config)}
    skipped_graph = graph.with_nodes(nodes).replace(metadata=metadata)
    return skipped_graph.validate() if validate else skipped_graph


def skip_node(graph: Graph, block: Block, name: str | None = None) -> Node:
    """The single node that produces ``block.output`` from ``block.input`` when it is skipped."""
    name = name or f"{block.name}_skip"
    x, out = graph.tensor(block.input), graph.tensor(block.output)
    add = graph.producer(block.output)
    assert add is not None
    act = Activation(add.attr("activation", Activation.NONE))
    ins, outs = (x.name,), (out.name,)
    if act is not Activation.NONE and not _clamp_is_noop(graph, block, act):
        op, attrs = _CLAMP_OPS[act]
        return Node(name, op, ins, outs, dict(attrs))
    if out.dtype is DType.FLOAT32 or x.quant == out.quant:
        return Node(name, "Reshape", ins, outs, {"shape": out.shape})
    return Node(name, "Quantize", ins, outs, {"dtype": out.dtype.value})


def is_alias(node: Node) -> bool:
    """True when a skip replacement node is a pure alias (no arithmetic at all)."""
    return node.op == "Reshape"


def _clamp_is_noop(graph: Graph, block: Block, act: Activation) -> bool:
    """True when every value ``x`` can hold already lies in the Add's activation range."""
    x, out = graph.tensor(block.input), graph.tensor(block.output)
    producer = graph.producer(x.name)
    if producer is None:
        return False
    x_act = _OP_ACTIVATION.get(producer.op) or Activation(
        producer.attr("activation", Activation.NONE))
    if x_act is Activation.NONE:
        return False
    if out.dtype is DType.FLOAT32:
        (lo, hi), (alo, ahi) = activation_range_float(x_act), activation_range_float(act)
        return alo <= lo and hi <= ahi
    if x.quant is None or out.quant is None or x.quant.per_channel or out.quant.per_channel:
        return False
    if x.quant == out.quant:
        (lo, hi), (alo, ahi) = (activation_range_quantized(x_act, x.quant),
                                activation_range_quantized(act, out.quant))
        return alo <= lo and hi <= ahi
    # why: Requantize is monotone and maps zp_x to exactly zp_out, so an x that is never
    # below its zero point (a ReLU'd x) never lands below the output's: ReLU clamps nothing.
    return act is Activation.RELU and x_act in (Activation.RELU, Activation.RELU6)


def _unique(name: str, taken: set[str]) -> str:
    candidate, k = name, 1
    while candidate in taken:
        k += 1
        candidate = f"{name}{k}"
    taken.add(candidate)
    return candidate
