"""The state a generated library keeps between invocations (``graph.state``), in C.

Each state variable has a slot in the state area at the end of the arena (after the planned
buffers, ``edgenn.memory.state``): the layers read the variable's ``read`` tensor there, and
after the last layer ``NAME_invoke`` copies each variable's ``write`` tensor (a planned
buffer kept alive to the end) into its slot, unless the layer writing it does so in place
(``KernelCall.state_in_place``, ``codegen/memory.py`` ``state_aliases``: the write tensor
then has the slot's offset and there is nothing to copy). ``NAME_reset_state`` writes the
initial values (a ``memset`` when every byte is equal, else a copy of a constant);
``NAME_init`` calls it.
TFLite Micro does the same with resource variables (ASSIGN_VARIABLE copies into the
resource buffer) and keeps LSTM / SVDF variable tensors until ``Reset``.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.backends.cortexm.codegen.names import c_comment
from edgenn.ir import Graph
from edgenn.memory import MemoryPlan


@dataclass(frozen=True)
class StateSlot:
    """One state variable: its slot's offset, bytes, the offset of its new value (None: no
    node changes it) and its initial bytes."""

    name: str
    offset: int
    nbytes: int
    write_offset: int | None
    init: bytes


def state_slots(graph: Graph, plan: MemoryPlan) -> tuple[StateSlot, ...]:
    """The slots of ``graph.state`` in a plan whose offsets include the state area."""
    return tuple(
        StateSlot(s.name, plan.offsets[s.read], graph.tensor(s.read).nbytes,
                  None if s.write == s.read else plan.offsets[s.write],
                  s.init.astype(s.init.dtype.newbyteorder("<")).tobytes())
        for s in graph.state)


def reset_function(name: str, arena: str, ready: str, ok: str, not_ready: str,
                   slots: tuple[StateSlot, ...]) -> str:
    """``int NAME_reset_state(void)``: every slot to its initial value."""
    consts: list[str] = []
    body: list[str] = []
    for k, s in enumerate(slots):
        body.append(f"    /* {c_comment(s.name)} */")
        if len(set(s.init)) <= 1:
            value = s.init[0] if s.init else 0
            body.append(f"    memset({arena} + {s.offset}u, {value}, {s.nbytes}u);")
        else:
            data = ", ".join(str(b) for b in s.init)
            consts.append(f"static const uint8_t {name}_state{k}_init[{s.nbytes}] = {{{data}}};")
            body.append(f"    memcpy({arena} + {s.offset}u, {name}_state{k}_init, {s.nbytes}u);")
    # why noinline: init calls it, which keeps the symbol in a --gc-sections image for the
    # emulator (and a debugger) to call between streams
    return ("\n".join(consts) + ("\n\n" if consts else "")
            + f"__attribute__((noinline)) int {name}_reset_state(void)\n{{\n"
            f"    if (!({ready})) {{\n        return {not_ready};\n    }}\n"
            + "".join(line + "\n" for line in body) + f"    return {ok};\n}}\n")


def store_statements(arena: str, slots: tuple[StateSlot, ...]) -> list[str]:
    """The end of ``NAME_invoke``: each changed variable's new value into its slot."""
    return [f"    memcpy({arena} + {s.offset}u, {arena} + {s.write_offset}u, {s.nbytes}u);"
            f"  /* state {c_comment(s.name)} */"
            for s in slots if s.write_offset is not None and s.write_offset != s.offset]
