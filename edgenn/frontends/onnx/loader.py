"""ONNX bytes -> edgenn Graph: parse, check, infer shapes, convert node by node, run passes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import onnx
from google.protobuf.message import DecodeError
from onnx import GraphProto, ModelProto, NodeProto, TensorProto

from edgenn.errors import (
    EdgennError,
    GraphValidationError,
    ModelFormatError,
    UnsupportedOperatorError,
)
from edgenn.frontends.onnx import (
    lift1d,
    ops,  # noqa: F401  (fills the converter table)
)
from edgenn.frontends.onnx.constfold import fold, foldable, to_array
from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.control import CONTROL_FLOW, convert_if, subgraphs, walk
from edgenn.frontends.onnx.fixinputs import assumed_ones, fix_inputs
from edgenn.frontends.onnx.qdq import plan_node
from edgenn.frontends.onnx.registry import CONVERTERS
from edgenn.frontends.onnx.values import NCHW_TO_NHWC, NHWC_TO_NCHW, NLC_TO_NCL, ConstVal, Value
from edgenn.ir import DType, Graph, Node, Tensor
from edgenn.ir.checks import INFINITE_OK, check_constants, first_nonfinite

_ELEM_TYPES: dict[int, DType] = {
    TensorProto.FLOAT: DType.FLOAT32,
    TensorProto.INT8: DType.INT8,
    TensorProto.UINT8: DType.UINT8,
    TensorProto.INT32: DType.INT32,
    TensorProto.INT64: DType.INT64,
    TensorProto.BOOL: DType.BOOL,
}


def supported_onnx_ops() -> list[str]:
    """The ONNX operator types the importer understands (If: its constant-condition form,
    which the loader imports itself, ``control.py``)."""
    return sorted(set(CONVERTERS) | CONTROL_FLOW)


def load_onnx(data: bytes, name: str = "<bytes>",
              input_shapes: Mapping[str, Sequence[int]] | None = None,
              input_values: Mapping[str, Any] | None = None) -> Graph:
    """Import an ONNX model (float, or QDQ-quantized int8) into the IR.

    Rank-4 inputs and outputs declared NCHW are stored NHWC inside; ``Graph.external_perm``
    records the permutation so runtimes still take and return NCHW arrays. Rank-3 (NCL, 1-D)
    inputs that feed a convolution, pooling or BatchNorm, and rank-3 outputs computed in the
    1-D channels-last layout, are [N, L, C] graph tensors with ``external_perm`` ``(0, 2, 1)``
    (the unit H axis of the [N, 1, L, C] layout is a Reshape inside).

    ``input_shapes`` fixes dynamic input dimensions (others are taken as 1); ``input_values``
    makes inputs constants (``edgenn.frontends.onnx.fixinputs``).
    """
    from edgenn.passes import standard_import_passes

    model = _parse(data, name, input_shapes, input_values)
    try:
        graph = _convert(model, name)
    except EdgennError as err:
        raise _with_assumed(err, model) from None
    try:
        # why before the passes: folding a batch-norm would spread a NaN weight into the conv
        check_constants(graph.tensors)
        return standard_import_passes(graph).validate()
    except GraphValidationError as err:
        raise GraphValidationError(f"{name}: {err}") from None


def _with_assumed(err: EdgennError, model: ModelProto) -> EdgennError:
    """A shape error in a model with dynamic input dimensions says which were taken as 1."""
    assumed = assumed_ones(model)
    text = str(err)
    shape_like = not isinstance(err, UnsupportedOperatorError) or "shape" in text \
        or "dimension" in text
    if not assumed or not shape_like:
        return err
    shown = ", ".join(assumed[:4]) + (", ..." if len(assumed) > 4 else "")
    return type(err)(f"{err} (dynamic input dimensions taken as 1: {shown}; fix them with "
                     "--input-shape NAME=D0,D1,...)")


def _parse(data: bytes, file: str, input_shapes: Mapping[str, Sequence[int]] | None = None,
           input_values: Mapping[str, Any] | None = None) -> ModelProto:
    try:
        model = onnx.load_model_from_string(bytes(data))
    except (DecodeError, ValueError, TypeError, RuntimeError, UnicodeDecodeError) as err:
        raise ModelFormatError(f"{file}: not a valid ONNX model ({_one_line(err)})") from None
    if not model.HasField("graph") or not model.graph.node:
        raise ModelFormatError(f"{file}: the ONNX model has no graph (truncated or not ONNX)")
    _check_text(model.graph, file)
    if input_shapes or input_values:
        fix_inputs(model, file, input_shapes, input_values)
    try:
        # inference first: it also fills in output types that some exporters leave out
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError) as err:
        raise ModelFormatError(f"{file}: ONNX shape inference fails ({_one_line(err)})") from None
    checked = model
    if any(not o.type.tensor_type.HasField("shape") for o in model.graph.output):
        # onnxruntime runs graphs whose output shapes are left open (shape arithmetic the
        # onnx inference cannot follow); the checker insists on the field, so give it one
        checked = ModelProto()
        checked.CopyFrom(model)
        for o in checked.graph.output:
            o.type.tensor_type.shape.SetInParent()
    try:
        onnx.checker.check_model(checked)
    except (onnx.checker.ValidationError, ValueError, RuntimeError) as err:
        raise ModelFormatError(f"{file}: invalid ONNX model ({_one_line(err)})") from None
    return model


def _check_text(g: GraphProto, file: str) -> None:
    """Every name must be text: protobuf hands a string field holding invalid UTF-8 to Python
    as ``bytes``, which no later stage expects (names are joined, formatted and compared)."""
    for kind, items in (("graph input", g.input), ("graph output", g.output),
                        ("initializer", g.initializer), ("value_info", g.value_info)):
        for item in items:
            if isinstance(item.name, bytes):
                raise ModelFormatError(f"{file}: {kind} name {item.name!r} is not UTF-8 text")
    for i, node in enumerate(g.node):
        fields = [node.name, node.op_type, node.domain, *node.input, *node.output,
                  *(a.name for a in node.attribute)]
        bad = next((f for f in fields if isinstance(f, bytes)), None)
        if bad is not None:
            raise ModelFormatError(f"{file}: node #{i} ({node.op_type!r}): the name {bad!r} "
                                   "is not UTF-8 text")


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _opset(model: ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 1


def _dims(vi: onnx.ValueInfoProto) -> list[int | None]:
    """Declared dimensions; None for symbolic or unknown ones."""
    return [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
            for d in vi.type.tensor_type.shape.dim]


def _convert(model: ModelProto, file: str) -> Graph:
    g: GraphProto = model.graph
    consumers: dict[str, list[NodeProto]] = {}
    producers: dict[str, NodeProto] = {}
    for node in walk(list(g.node)):  # why subgraphs too: an inlined If branch reads these
        for name in node.input:
            if name:
                consumers.setdefault(name, []).append(node)
        producers.update((o, node) for o in node.output if o)
    ctx = Context(file, _opset(model), consumers, {o.name for o in g.output}, producers,
                  {vi.name for vi in g.input})

    for init in g.initializer:
        ctx.set_const(init.name, ConstVal(to_array(ctx, init)))
    inputs = [vi for vi in g.input if vi.name not in ctx.consts]
    external_perm: dict[str, tuple[int, ...]] = {}
    for vi in inputs:
        _add_input(ctx, vi, external_perm)

    inferred = {vi.name: _dims(vi) for vi in _value_infos(g)
                if vi.type.tensor_type.HasField("shape")}

    def convert(node: NodeProto) -> None:
        _convert_node(ctx, node, convert)
        _check_shapes(ctx, node, inferred)

    for node in g.node:
        convert(node)

    ctx.node = None
    ctx.quantized = False
    outputs: list[str] = []
    for vi in g.output:
        if vi.name in ctx.consts:
            raise ModelFormatError(f"{file}: graph output {vi.name!r} is a constant")
        v = ctx.value(vi.name)
        if v.ncl:
            n, _, length, c = ctx.tensors[v.ir].shape
            v = Value(ctx.emit("Reshape", [v.ir], {"shape": (n, length, c)},
                               hint=vi.name + ":nlc"))
            external_perm[v.ir] = NLC_TO_NCL
        elif v.nhwc:
            external_perm[v.ir] = NHWC_TO_NCHW
        outputs.append(v.ir)
    graph = Graph(
        name=g.name or file,
        tensors=ctx.tensors,
        nodes=tuple(ctx.nodes),
        inputs=tuple(vi.name for vi in inputs),
        outputs=tuple(outputs),
        external_perm=external_perm,
        metadata={"source": "onnx", "file": file, "opset": str(ctx.opset)},
    )
    return _rename_outputs(graph, [vi.name for vi in g.output])


def _add_input(ctx: Context, vi: onnx.ValueInfoProto, perm: dict[str, tuple[int, ...]]) -> None:
    elem = vi.type.tensor_type.elem_type
    dtype = _ELEM_TYPES.get(elem)
    if dtype is None:
        raise ctx.fail(f"graph input {vi.name!r} has unsupported element type "
                       f"{TensorProto.DataType.Name(elem)}")
    shape = [d or 1 for d in _dims(vi)]  # symbolic (batch) dimensions become 1
    nhwc = len(shape) == 4
    if nhwc:
        shape = [shape[p] for p in NCHW_TO_NHWC]
        perm[vi.name] = NHWC_TO_NCHW
    ncl = len(shape) == 3 and lift1d.feeds_channels_last(ctx.consumers, vi.name)
    if ncl:  # a 1-D signal: the host transposes NCL -> NLC, a Reshape adds the unit H
        n, c, length = shape
        shape = [n, length, c]
        perm[vi.name] = NLC_TO_NCL
    ctx.tensors[vi.name] = Tensor(vi.name, tuple(shape), dtype)
    ctx.bind(vi.name, Value(vi.name, nhwc))
    if ncl:
        ctx.emit("Reshape", [vi.name], {"shape": (n, 1, length, c)}, hint=vi.name + ":nhwc")
        ctx.bind(vi.name, Value(ctx.nodes[-1].outputs[0], ncl=True))


def _value_infos(g: GraphProto) -> list[onnx.ValueInfoProto]:
    """The graph's value_info and outputs, then its subgraphs' (an outer name wins)."""
    inner = [vi for node in walk(list(g.node)) for sub in subgraphs(node)
             for vi in list(sub.value_info) + list(sub.output)]
    return inner + list(g.value_info) + list(g.output)


def _convert_node(ctx: Context, node: NodeProto,
                  convert: Callable[[NodeProto], None] | None = None) -> None:
    ctx.begin(node, quantized=False)
    if node.domain not in ("", "ai.onnx"):
        raise ctx.fail(f"unsupported operator '{node.domain}.{node.op_type}'")
    for attr in node.attribute:
        # why here as well as in the IR: converters fold some attributes (Gemm's alpha, LRN's
        # size) into constants or other values before any IR node holds them
        bad = first_nonfinite(ctx.attr(attr.name),
                              attr.name in INFINITE_OK.get(node.op_type, ()))
        if bad is not None:
            raise ctx.malformed(f"attribute {attr.name} is {bad}")
    try:
        if node.op_type in CONTROL_FLOW:
            convert_if(ctx, node, convert or (lambda n: _convert_node(ctx, n)))
            return
        if foldable(ctx, node):
            fold(ctx, node)
            return
        fn = CONVERTERS.get(node.op_type)
        if fn is None:
            raise ctx.fail(f"unsupported operator '{node.op_type}'{_type_note(ctx, node)}")
        ctx.begin(node, quantized=plan_node(ctx, node))
        lift1d.convert(ctx, node, fn)
    except EdgennError as err:
        if str(err).startswith(ctx.file):
            raise
        # why the check: the IR's errors already name their node ("Conv2D node 'conv1': ...");
        # name it once
        where = "" if f"node {ctx.node_name!r}" in str(err) else f"node {ctx.node_name!r}: "
        raise type(err)(f"{ctx.file}: {where}{err}") from None
    except (KeyError, IndexError, ValueError, TypeError, ArithmeticError) as err:
        # a well-formed model never gets here: attributes or constants of the wrong kind
        raise ctx.malformed(f"malformed {node.op_type} ({_one_line(err)})") from None


def _type_note(ctx: Context, node: NodeProto) -> str:
    """`` on float32`` (the first input's element type, when known), for error messages."""
    name = next((n for n in node.input if n), None)
    if name is None:
        return ""
    if ctx.is_const(name):
        return f" on {ctx.const_array(name).dtype.name}"
    try:
        return f" on {ctx.tensors[ctx.act(name).ir].dtype.value}"
    except (EdgennError, KeyError):
        return ""


def _check_shapes(ctx: Context, node: NodeProto, inferred: dict[str, list[int | None]]) -> None:
    """Cross-check our shapes against ONNX shape inference (a converter bug shows up here)."""
    for out in node.output:
        dims = inferred.get(out)
        if not out or dims is None or (out not in ctx.values and out not in ctx.consts):
            continue
        ours = ctx.onnx_shape(out)
        if len(ours) != len(dims) or any(
            d is not None and d != o for d, o in zip(dims, ours, strict=True)
        ):
            raise GraphValidationError(
                f"{ctx.file}: node {ctx.node_name!r}: output {out!r} has shape {list(ours)} "
                f"but ONNX shape inference gives {[d if d else '?' for d in dims]}"
            )


def _rename_outputs(graph: Graph, onnx_names: list[str]) -> Graph:
    """Give graph outputs their ONNX names when an Identity or a view renamed them."""
    mapping: dict[str, str] = {}
    for ir, name in zip(graph.outputs, onnx_names, strict=True):
        if ir != name and name not in graph.tensors and ir not in graph.inputs \
                and ir not in mapping:
            mapping[ir] = name
    if not mapping:
        return graph

    def ren(n: str) -> str:
        return mapping.get(n, n)

    nodes = [Node(n.name, n.op, tuple(ren(i) for i in n.inputs), tuple(ren(o) for o in n.outputs),
                  n.attrs) for n in graph.nodes]
    tensors: dict[str, Any] = {ren(k): (t.with_(name=ren(k)) if k in mapping else t)
                               for k, t in graph.tensors.items()}
    perm = {ren(k): v for k, v in graph.external_perm.items()}
    return graph.replace(nodes=tuple(nodes), tensors=tensors,
                         outputs=tuple(ren(o) for o in graph.outputs), external_perm=perm)

