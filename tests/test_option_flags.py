"""CLI flags derived from the backends' options dataclasses, and their checks in one place."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from edgenn.api import compile_model
from edgenn.backends.cortexm.backend import CortexMOptions
from edgenn.backends.host.backend import HostOptions
from edgenn.backends.options import option_flags
from edgenn.backends.vta.backend import VtaOptions
from edgenn.cli.compile_cmd import (
    add_device_options,
    add_host_options,
    add_vta_options,
    device_options,
    host_options,
    target_options,
    vta_options,
)
from edgenn.cli.main import main
from edgenn.cli.options import add_out_dir_option
from edgenn.errors import EdgennError
from edgenn.ir import Graph

ROOT = Path(__file__).resolve().parents[1]
CONV2 = ROOT / "tests" / "fixtures" / "tflite" / "conv2_int8.tflite"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(exit_on_error=False)
    p.add_argument("--target", default="ref")
    add_device_options(p)
    add_vta_options(p)
    add_host_options(p)
    return p


def test_every_flag_maps_to_a_field_of_its_dataclass() -> None:
    args = _parser().parse_args(["--ram-kb", "64", "--vta-bus-bits", "64", "--threads", "2",
                                 "--schedule", "0:1", "--arena", "external"])
    dev, vta, host = device_options(args), vta_options(args), host_options(args)
    assert (dev["ram_kb"], dev["arena"], dev["board"], dev["opt"]) == (64, "external",
                                                                       "generic", "-O2")
    assert vta == {"preset": None, "schedule": None, "bus_bits": 64}
    assert host["threads"] == 2 and host["schedule"] != "0:1"  # parsed into a ThreadSchedule
    for cls, values in ((CortexMOptions, dev), (VtaOptions, vta), (HostOptions, host)):
        names = {f.name for f in fields(cls)}
        assert {n for n, _ in option_flags(cls)} <= names
        assert {n for n, _ in option_flags(cls)} <= set(values)


def test_target_options_follow_the_registered_dataclass() -> None:
    p = _parser()
    ref = target_options(p.parse_args([]))
    assert set(ref) == {"fuse", "fusion_variant", "ram_budget", "latency_bound", "skip"}
    vta = target_options(p.parse_args(["--target", "vta", "--vta-schedule", "optimized"]))
    assert vta["schedule"] == "optimized" and "ram_kb" not in vta and "threads" not in vta
    m4 = target_options(p.parse_args(["--target", "cortex-m4", "--fusion-variant",
                                      "ring_hoisted"]))
    assert (m4["fuse"], m4["fusion_variant"], m4["board"]) == ("all", "ring_hoisted", "generic")


def test_argparse_enforces_choices() -> None:
    with pytest.raises(argparse.ArgumentError):
        _parser().parse_args(["--arena", "heap"])
    with pytest.raises(argparse.ArgumentError):
        _parser().parse_args(["--vta-preset", "vc707"])


@pytest.mark.parametrize(("target", "options", "message"), [
    ("cortex-m4", {"arena": "heap"}, r"unknown arena 'heap' for target cortex-m4 \(--arena"),
    ("cortex-m4", {"ram_kb": 0}, r"--ram-kb must be >= 1 for target cortex-m4"),
    ("host", {"threads": 0}, r"--threads must be >= 1 for target host \(option threads\)"),
    ("vta", {"preset": "vc707"}, r"unknown preset 'vc707' for target vta \(--vta-preset"),
])
def test_api_checks_the_same_choices_and_ranges(target: str, options: dict[str, object],
                                               message: str) -> None:
    graph = Graph("g", {}, (), (), ())  # why empty: options are checked before any build
    with pytest.raises(EdgennError, match=message) as err:
        compile_model(graph, target=target, **options)
    assert "\n" not in str(err.value)


def test_cli_range_error_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    np.save(tmp_path / "x.npy", np.zeros((1, 28, 28, 1), np.int8))
    assert main(["run", str(CONV2), "--input", str(tmp_path / "x.npy"),
                 "-o", str(tmp_path / "y.npy"), "--target", "host", "--threads", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("edgenn run: error: --threads must be >= 1 for target host "
                   "(option threads), got 0")
    assert not (tmp_path / "y.npy").exists()


def test_out_dir_option() -> None:
    p = argparse.ArgumentParser()
    add_out_dir_option(p, "out/x", "things")
    assert p.parse_args([]).out_dir == "out/x"
    assert p.parse_args(["--out-dir", "a"]).out_dir == "a"
    # the old spelling --out is refused (tests/test_fusion_names.py)
