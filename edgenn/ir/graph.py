"""The Graph: nodes in execution order over named tensors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from edgenn.errors import GraphValidationError
from edgenn.ir.checks import check_constants
from edgenn.ir.node import Node
from edgenn.ir.state import StateVar
from edgenn.ir.tensor import Tensor


@dataclass(frozen=True, eq=False)
class Graph:
    """A static dataflow graph.

    ``nodes`` are in a valid execution (topological) order. ``external_perm`` maps a graph
    input or output name to the permutation that turns the internal array (NHWC) into the
    layout the model file declares (e.g. ``(0, 3, 1, 2)`` for an ONNX NCHW input); runtimes
    apply it at the boundary so users feed and receive arrays as the file declares them.
    ``state``: the values kept from one invocation to the next (``edgenn.ir.state``); each
    variable's ``read`` tensor is defined before the first node and its ``write`` tensor is
    kept alive to the end like a graph output.
    """

    name: str
    tensors: Mapping[str, Tensor]
    nodes: tuple[Node, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    external_perm: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    state: tuple[StateVar, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", tuple(self.state))
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "tensors", dict(self.tensors))

    # -- look-ups ---------------------------------------------------------------------------
    def tensor(self, name: str) -> Tensor:
        try:
            return self.tensors[name]
        except KeyError:
            raise GraphValidationError(f"graph {self.name!r}: no tensor named {name!r}") from None

    def node_inputs(self, node: Node) -> list[Tensor | None]:
        """The node's input tensors; ``None`` for an omitted optional input."""
        return [self.tensor(n) if n else None for n in node.inputs]

    def node_outputs(self, node: Node) -> list[Tensor]:
        return [self.tensor(n) for n in node.outputs]

    @cached_property
    def producers(self) -> dict[str, Node]:
        return {out: node for node in self.nodes for out in node.outputs}

    @cached_property
    def consumers(self) -> dict[str, list[Node]]:
        result: dict[str, list[Node]] = {name: [] for name in self.tensors}
        for node in self.nodes:
            for name in node.inputs:
                if name:
                    result.setdefault(name, []).append(node)
        return result

    def producer(self, tensor_name: str) -> Node | None:
        return self.producers.get(tensor_name)

    @property
    def state_reads(self) -> tuple[str, ...]:
        return tuple(s.read for s in self.state)

    @property
    def sinks(self) -> tuple[str, ...]:
        """Tensors that must be computed however few nodes read them: the graph outputs and
        the state writes."""
        return (*self.outputs, *(s.write for s in self.state))

    @property
    def finite_float_clamp(self) -> bool:
        """Whether float layers clamp their fused activation's open bounds to +-FLT_MAX.

        why the file's format: TFLite's float kernels clamp every fused activation, none
        included, to [lowest(), max()] (TFLite Micro's ``x + inf`` is FLT_MAX) while
        onnxruntime's layers do not clamp (its ``x + inf`` is inf); each backend computes
        what the runtime of the model's own format computes.
        """
        return self.metadata.get("format") == "tflite"

    def state_bytes(self) -> int:
        """Bytes of state kept between invocations (at batch 1)."""
        return sum(self.tensor(s.read).nbytes for s in self.state)

    def input_tensors(self) -> list[Tensor]:
        return [self.tensor(n) for n in self.inputs]

    def output_tensors(self) -> list[Tensor]:
        return [self.tensor(n) for n in self.outputs]

    def external_shape(self, name: str) -> tuple[int, ...]:
        """The shape of a graph input/output as the model file declares it."""
        shape = self.tensor(name).shape
        perm = self.external_perm.get(name)
        return tuple(shape[p] for p in perm) if perm else shape

    # -- rewriting --------------------------------------------------------------------------
    def replace(self, **changes: object) -> Graph:
        return replace(self, **changes)  # type: ignore[arg-type]

    def with_nodes(
        self, nodes: Iterable[Node], tensors: Mapping[str, Tensor] | None = None
    ) -> Graph:
        """A new graph with these nodes; tensors no longer referenced are dropped."""
        nodes = tuple(nodes)
        pool = dict(self.tensors if tensors is None else tensors)
        used = set(self.inputs) | set(self.sinks) | set(self.state_reads)
        for node in nodes:
            used.update(n for n in node.inputs if n)
            used.update(node.outputs)
        return replace(self, nodes=nodes, tensors={k: v for k, v in pool.items() if k in used})

    # -- checks -----------------------------------------------------------------------------
    def validate(self) -> Graph:
        """Check references, order and single assignment; raise one clear error or return self."""
        # why local: importing the IR types does not load every operator definition
        from edgenn.ir.shapes import infer_node

        check_constants(self.tensors)
        defined = {name for name, t in self.tensors.items() if t.is_const}
        for name in self.inputs:
            if name not in self.tensors:
                raise GraphValidationError(f"graph input {name!r} has no tensor")
            defined.add(name)
        self._validate_state_reads(defined)
        names_seen: set[str] = set()
        for node in self.nodes:
            if node.name in names_seen:
                raise GraphValidationError(f"two nodes are named {node.name!r}")
            names_seen.add(node.name)
            for name in node.inputs:
                if name and name not in defined:
                    raise GraphValidationError(
                        f"{node}: input {name!r} is used before it is produced"
                    )
            for name in node.outputs:
                if name in defined:
                    raise GraphValidationError(f"{node}: tensor {name!r} is assigned twice")
                if name not in self.tensors:
                    raise GraphValidationError(f"{node}: output {name!r} has no tensor")
                defined.add(name)
            expected = infer_node(self, node)
            for name, (shape, dtype) in zip(node.outputs, expected, strict=True):
                t = self.tensors[name]
                if t.shape != shape or t.dtype != dtype:
                    raise GraphValidationError(
                        f"{node}: output {name!r} is declared {t.dtype.value}{list(t.shape)} "
                        f"but the operator gives {dtype.value}{list(shape)}"
                    )
        for name in self.outputs:
            if name not in defined:
                raise GraphValidationError(f"graph output {name!r} is never produced")
        for s in self.state:
            if s.write not in defined:
                raise GraphValidationError(f"state {s.name!r}: its new value {s.write!r} is "
                                           "never produced")
            w, r = self.tensor(s.write), self.tensor(s.read)
            if w.dtype != r.dtype or w.nbytes != r.nbytes:
                raise GraphValidationError(
                    f"state {s.name!r}: written as {w.dtype.value}{list(w.shape)} but read as "
                    f"{r.dtype.value}{list(r.shape)}")
        return self

    def _validate_state_reads(self, defined: set[str]) -> None:
        seen: set[str] = set()
        for s in self.state:
            if s.name in seen:
                raise GraphValidationError(f"two state variables are named {s.name!r}")
            seen.add(s.name)
            if s.read not in self.tensors:
                raise GraphValidationError(f"state {s.name!r}: no tensor named {s.read!r}")
            t = self.tensors[s.read]
            if s.read in defined or t.is_const:
                raise GraphValidationError(f"state {s.name!r}: {s.read!r} is also a graph "
                                           "input, a constant or another state")
            if s.init.shape != t.shape or s.init.dtype != t.dtype.numpy:
                raise GraphValidationError(
                    f"state {s.name!r}: initial value {s.init.dtype}{list(s.init.shape)} does "
                    f"not match {t.dtype.value}{list(t.shape)}")
            defined.add(s.read)

    def __str__(self) -> str:
        return f"Graph {self.name!r} ({len(self.nodes)} nodes)"
