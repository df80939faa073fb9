"""Descriptive names for fusion variants and VTA schedules, with the old spellings as aliases."""

from __future__ import annotations

import pytest

from edgenn.backends.vta.errors import VtaScheduleError
from edgenn.backends.vta.schedules import SCHEDULES, schedule_name
from edgenn.cli.compile_cmd import add_fusion_options
from edgenn.errors import EdgennError
from edgenn.fusion import FUSION_VARIANTS, fuse_for_target, fusion_variant_name
from edgenn.ir import Graph


@pytest.mark.parametrize(("alias", "name"), [
    ("a", "layer_by_layer"), ("b", "ring_modulo"), ("c", "ring_hoisted"),
    ("d", "ring_hoisted_pair"), ("ring-hoisted-pair", "ring_hoisted_pair"),
    ("ring_modulo", "ring_modulo")])
def test_fusion_variant_aliases(alias: str, name: str) -> None:
    assert fusion_variant_name(alias) == name


def test_cli_accepts_names_and_letters_and_rejects_others() -> None:
    import argparse

    p = argparse.ArgumentParser(exit_on_error=False)
    add_fusion_options(p)
    assert p.parse_args(["--fusion-variant", "c"]).fusion_variant == "ring_hoisted"
    assert p.parse_args(["--fusion-variant", "ring_modulo"]).fusion_variant == "ring_modulo"
    with pytest.raises(argparse.ArgumentError):
        p.parse_args(["--fusion-variant", "e"])
    assert FUSION_VARIANTS == ("layer_by_layer", "ring_modulo", "ring_hoisted",
                               "ring_hoisted_pair")


def test_unknown_variant_is_one_line_error() -> None:
    with pytest.raises(EdgennError, match="unknown --fusion-variant 'zz'"):
        fuse_for_target(Graph("g", {}, (), (), ()), variant="zz")


def test_vta_schedule_alias() -> None:
    assert SCHEDULES == ("tiled2", "optimized", "tall_pipelined")
    assert schedule_name("ours") == "tall_pipelined"
    assert schedule_name("tiled2") == "tiled2"
    with pytest.raises(VtaScheduleError, match="unknown VTA schedule 'fast'"):
        schedule_name("fast")
