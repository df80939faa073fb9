"""Which operators the quantizer keeps in float32, and why.

A node gets a quantized kernel only when every condition below holds; the first one that
fails is its reason for staying float32 (between a Dequantize and a Quantize):

1. TFLite Micro has an integer kernel of the activation type for the operator, and the
   quantizer uses it (``rules.why_not``: no rule, no kernel of that type, a deliberate
   exception such as Div, or a per-node limit such as a grouped TransposeConv2D);
2. edgenn's reference runtime has that kernel (the quantized graph must run everywhere);
3. its data operands are float32 (integer operands only where the rule takes indices);
4. a weighted operator's weights and bias are constants.

``quantize`` chooses its quantized nodes with :func:`float_reason`, after the same rewrite of
BatchNorm and HardSigmoid (``lower.py``), so the list :func:`float_islands` gives is exactly
what the quantized graph runs in float32.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.ir import DType, Graph, Node
from edgenn.quantize import rules, scheme
from edgenn.quantize.lower import lower_for_quantization


@dataclass(frozen=True)
class FloatIsland:
    """One operator the quantized graph runs in float32."""

    node: str
    op: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"node": self.node, "op": self.op, "reason": self.reason}


def quantized_ops(act: scheme.ActivationType) -> frozenset[str]:
    """The scheme's operators for ``act`` that the reference runtime has a kernel of that
    type for."""
    import edgenn.backends.ref.kernels  # noqa: F401  (registers the layers)
    from edgenn.backends.ref.layer import registered

    available = {op for op, dt in registered() if dt == act.dtype}

    def has_kernel(op: str) -> bool:
        rule = rules.rule(op)
        return (rule.becomes if rule is not None and rule.becomes else op) in available

    return frozenset(op for op in act.ops if has_kernel(op))


def float_reason(graph: Graph, node: Node, ops: frozenset[str],
                 act: scheme.ActivationType = scheme.INT8) -> str | None:
    """Why ``node`` runs in float32 after quantization to ``act`` (None: it is quantized).
    ``ops`` is :func:`quantized_ops` of ``act``."""
    why = rules.why_not(graph, node, act.dtype)
    if why is not None:
        return why
    r = rules.rule(node.op)
    assert r is not None  # why_not names every operator without a rule
    if node.op not in ops:
        return f"edgenn's reference runtime has no {act.dtype.value} {node.op} kernel"
    for i, t in enumerate(graph.node_inputs(node)):
        if t is None:
            continue
        if t.dtype is not DType.FLOAT32 and i not in r.index_operands:
            return f"operand {t.name!r} is {t.dtype.value}, not float32"
        if r.weighted and i > 0 and not t.is_const:
            return f"its {'weights' if i == 1 else 'bias'} {t.name!r} are computed, not constant"
    return None


def _touches_float(graph: Graph, node: Node) -> bool:
    names = [n for n in (*node.inputs, *node.outputs) if n]
    return any(graph.tensor(n).dtype is DType.FLOAT32 and not graph.tensor(n).is_const
               for n in names)


def float_islands(graph: Graph, activations: str = "int8") -> list[FloatIsland]:
    """The operators of the float graph that ``quantize(graph, ..., activations=...)`` keeps
    in float32, in graph order, each with its reason. Nodes on integer data only (shape
    arithmetic, indices) are not listed: they are not float."""
    act = scheme.activation_type(activations)
    ops = quantized_ops(act)
    graph = lower_for_quantization(graph)  # what ``quantize`` quantizes
    found = []
    for node in graph.nodes:
        if not _touches_float(graph, node):
            continue
        reason = float_reason(graph, node, ops, act)
        if reason is not None:
            found.append(FloatIsland(node.name, node.op, reason))
    return found
