"""Runtime layer skipping: find residual blocks with an identity shortcut, skip them, and plan
one arena valid for every skip configuration. See docs/skipping.md."""

from edgenn.passes.skip.apply import SKIP_METADATA_KEY, apply_skip, is_alias, skip_node
from edgenn.passes.skip.blocks import Block, find_blocks
from edgenn.passes.skip.config import (
    FULL,
    MAX_ENUMERATED_BLOCKS,
    SkipConfig,
    all_configs,
    config_mask,
    configs_up_to,
    default_configs,
    format_skip,
    parse_skip,
)
from edgenn.passes.skip.memory import (
    SkipMemoryPlan,
    config_buffers,
    config_peak,
    plan_for_configs,
)

__all__ = [
    "FULL",
    "MAX_ENUMERATED_BLOCKS",
    "SKIP_METADATA_KEY",
    "Block",
    "SkipConfig",
    "SkipMemoryPlan",
    "all_configs",
    "apply_skip",
    "config_buffers",
    "config_mask",
    "config_peak",
    "configs_up_to",
    "default_configs",
    "find_blocks",
    "format_skip",
    "is_alias",
    "parse_skip",
    "plan_for_configs",
    "skip_node",
]
