"""Static memory planning: place every activation buffer in one arena, reusing dead bytes."""

from edgenn.memory.arena import PLANNERS, get_planner, plan_graph
from edgenn.memory.buffer import Buffer
from edgenn.memory.check import check_plan, live_bytes_peak
from edgenn.memory.greedy import GreedyPlanner
from edgenn.memory.lifetimes import graph_buffers, reshape_aliases
from edgenn.memory.linear import LinearPlanner
from edgenn.memory.plan import DEFAULT_ALIGNMENT, MemoryPlan, Planner
from edgenn.memory.state import state_area_bytes, state_offsets

__all__ = [
    "DEFAULT_ALIGNMENT",
    "PLANNERS",
    "Buffer",
    "GreedyPlanner",
    "LinearPlanner",
    "MemoryPlan",
    "Planner",
    "check_plan",
    "get_planner",
    "graph_buffers",
    "live_bytes_peak",
    "plan_graph",
    "reshape_aliases",
    "state_area_bytes",
    "state_offsets",
]
