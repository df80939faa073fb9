"""Descriptive names for fusion variants, VTA schedules and CLI options; the spellings from
before the renames (variants a-d, schedule ``ours``, ``--out``, ``--plot``) are refused."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from edgenn.backends.vta.errors import VtaScheduleError
from edgenn.backends.vta.schedules import SCHEDULES, schedule_name
from edgenn.cli.compile_cmd import add_fusion_options
from edgenn.cli.main import main
from edgenn.errors import EdgennError
from edgenn.fusion import FUSION_VARIANTS, fuse_for_target, fusion_variant_name
from edgenn.ir import Graph
from tests.cli_errors import error_line

MODEL = Path(__file__).parent / "fixtures" / "tflite" / "model_c_int8.tflite"


@pytest.mark.parametrize(("spelling", "name"), [
    ("ring-hoisted-pair", "ring_hoisted_pair"), ("Ring_Modulo", "ring_modulo"),
    ("layer_by_layer", "layer_by_layer")])
def test_fusion_variant_spellings(spelling: str, name: str) -> None:
    assert fusion_variant_name(spelling) == name


def test_cli_takes_variant_names_only() -> None:
    p = argparse.ArgumentParser(exit_on_error=False)
    add_fusion_options(p)
    assert p.parse_args(["--fusion-variant", "ring_modulo"]).fusion_variant == "ring_modulo"
    for old in ("a", "b", "c", "d", "e"):
        with pytest.raises(argparse.ArgumentError, match="invalid choice"):
            p.parse_args(["--fusion-variant", old])
    assert FUSION_VARIANTS == ("layer_by_layer", "ring_modulo", "ring_hoisted",
                               "ring_hoisted_pair")


@pytest.mark.parametrize("old", ["d", "zz"])
def test_unknown_variant_is_one_line_error(old: str) -> None:
    with pytest.raises(EdgennError, match=f"unknown --fusion-variant '{old}' "
                                          r"\(layer_by_layer, ring_modulo, ") as err:
        fuse_for_target(Graph("g", {}, (), (), ()), variant=old)
    assert "\n" not in str(err.value)


def test_vta_schedule_names() -> None:
    assert SCHEDULES == ("tiled2", "optimized", "tall_pipelined")
    assert schedule_name("tiled2") == "tiled2"
    for old in ("ours", "fast"):
        with pytest.raises(VtaScheduleError, match=f"unknown VTA schedule '{old}' "
                                                   r"\(available: tiled2, optimized, "
                                                   r"tall_pipelined\)$"):
            schedule_name(old)


def test_cli_refuses_the_old_vta_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    err = error_line(capsys, ["bench", str(MODEL), "--target", "vta", "--vta-schedule", "ours"])
    assert "unknown VTA schedule 'ours'" in err


@pytest.mark.parametrize(("argv", "says"), [
    (["vta-gemm", "--m", "16", "--k", "16", "--n", "16", "--schedule", "ours"],
     "argument --schedule: invalid choice: 'ours'"),
    (["vta-gemm", "--m", "16", "--k", "16", "--n", "16", "--out", "int32"],
     "unrecognized arguments: --out int32"),
    (["demo", "--out", "somewhere"], "unrecognized arguments: --out somewhere"),
    (["bench", str(MODEL), "--target", "ref", "--plot", "p.png"],
     "unrecognized arguments: --plot p.png"),
])
def test_cli_refuses_old_spellings(argv: list[str], says: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Not even as a prefix of the real option (--out of --out-dir / --output-type)."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    # argparse's line: the sub-command's parser names itself, the top one says "edgenn"
    assert says in last and last.startswith("edgenn") and ": error: " in last
