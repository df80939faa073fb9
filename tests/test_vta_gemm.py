"""GEMM on the simulated VTA: every schedule bit-exact with numpy, reports, CLI, Table-2 sanity."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.errors import VtaError
from edgenn.backends.vta.gemm import SCHEDULES, GemmRun, run_gemm, time_gemm
from edgenn.cli.main import main
from edgenn.cli.vta_gemm_cmd import reference
from edgenn.errors import ShapeError

# ragged everywhere: M, K, N not multiples of 16, M below 3 and below 16, one-element GEMMs
SHAPES = [(1, 1, 1), (2, 17, 3), (16, 16, 16), (37, 50, 23), (5, 300, 40), (70, 33, 130)]


def operands(m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    bias = rng.integers(-(2**24), 2**24, n, dtype=np.int32)
    return a, b, bias


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("shape", SHAPES)
def test_int8_output_with_bias_and_shift_is_bit_exact(schedule: str,
                                                      shape: tuple[int, int, int]) -> None:
    a, b, bias = operands(*shape)
    for use_bias, shift in ((False, 0), (True, 7)):
        bb = bias if use_bias else None
        got = run_gemm(a, b, schedule=schedule, out="int8", shift=shift, bias=bb)
        assert got.result.dtype == np.int8 and got.result.shape == (shape[0], shape[2])
        assert np.array_equal(got.result, reference(a, b, bb, "int8", shift))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("shape", SHAPES[2:])
def test_int32_output_is_exact(schedule: str, shape: tuple[int, int, int]) -> None:
    a, b, bias = operands(*shape, seed=1)
    a[0] = -128  # extreme products: the byte planes must carry signs and borrows
    b[:, 0] = -128
    for bb in (None, bias):
        got = run_gemm(a, b, schedule=schedule, out="int32", bias=bb)
        assert got.result.dtype == np.int32
        assert np.array_equal(got.result, reference(a, b, bb, "int32", 0))


def test_int32_planes_interleave_with_the_next_tile() -> None:
    """Many output tiles: ours pipelines tile t's byte planes under tile t+1's GEMMs."""
    a, b, bias = operands(600, 300, 300, seed=2)
    got = run_gemm(a, b, schedule="tall_pipelined", out="int32", bias=bias)
    assert np.array_equal(got.result, reference(a, b, bias, "int32", 0))
    stores = got.report.insn_counts["STORE OUT"]
    assert stores >= 4 * 3 and got.report.insn_counts["ALU SHR"] == 3 * stores // 4


@settings(max_examples=12)
@given(st.integers(1, 80), st.integers(1, 200), st.integers(1, 80), st.booleans(),
       st.sampled_from(SCHEDULES))
def test_random_shapes(m: int, k: int, n: int, with_bias: bool, schedule: str) -> None:
    a, b, bias = operands(m, k, n, seed=m * 1000 + n)
    bb = bias if with_bias else None
    got = run_gemm(a, b, schedule=schedule, out="int32", bias=bb)
    assert np.array_equal(got.result, reference(a, b, bb, "int32", 0))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_wider_than_the_accumulator_buffer(schedule: str) -> None:
    """N = 2100: 132 column blocks, more than one accumulator row (and bias row) holds."""
    a, b, bias = operands(20, 40, 2100, seed=5)
    got = run_gemm(a, b, schedule=schedule, out="int8", shift=3, bias=bias)
    assert np.array_equal(got.result, reference(a, b, bias, "int8", 3))


def test_accumulator_wraps_like_int32() -> None:
    a = np.full((16, 64), -128, np.int8)
    b = np.full((64, 16), -128, np.int8)
    bias = np.full(16, 2**31 - 2**19, np.int32)  # 64 * 16384 = 2**20 more overflows int32
    got = run_gemm(a, b, schedule="tall_pipelined", out="int32", bias=bias)
    assert np.array_equal(got.result, reference(a, b, bias, "int32", 0))
    assert got.result[0, 0] < 0


@pytest.mark.parametrize("call, error, message", [
    (lambda a, b: run_gemm(a, b, schedule="fast"), VtaError, "unknown VTA schedule 'fast'"),
    (lambda a, b: run_gemm(a.astype(np.float32), b), ShapeError, "a must be a 2-D int8"),
    (lambda a, b: run_gemm(a, b[:3]), ShapeError, r"cannot multiply \[4, 5\] by \[3, 6\]"),
    (lambda a, b: run_gemm(a, b, bias=np.zeros(6, np.int64)), ShapeError, "bias must be int32"),
    (lambda a, b: run_gemm(a, b, bias=np.zeros(5, np.int32)), ShapeError, r"int32 \[6\]"),
    (lambda a, b: run_gemm(a, b, out="int16"), VtaError, "unknown output 'int16'"),
    (lambda a, b: run_gemm(a, b, out="int32", shift=2), VtaError, "int8 output only"),
    (lambda a, b: run_gemm(a, b, shift=40), VtaError, "shift 40 must be an integer in 0..31"),
    (lambda a, b: VtaConfig.preset("vc707"), VtaError, "unknown VTA preset 'vc707'"),
])
def test_user_errors_are_one_line(call: object, error: type[Exception], message: str) -> None:
    a = np.ones((4, 5), np.int8)
    b = np.ones((5, 6), np.int8)
    with pytest.raises(error, match=message) as err:
        call(a, b)  # type: ignore[operator]
    assert "\n" not in str(err.value)


def test_report_fields_and_timing_only_path() -> None:
    a, b, _ = operands(100, 300, 70)
    run = run_gemm(a, b, schedule="optimized")
    info = run.report.to_json()
    for key in ("m", "k", "n", "schedule", "preset", "cycles", "time_ms", "gops", "peak_gops",
                "gemm_utilization", "dram_bytes", "module_busy_cycles", "instructions",
                "assumed", "host_pack_ms", "percent_of_peak"):
        assert key in info
    assert set(info["dram_bytes"]) >= {"uop", "inp", "wgt", "acc", "out"}
    assert info["assumed"]["dram_read_latency"] == 48 and "dispatch" in info["assumed"]
    assert info["time_ms"] == pytest.approx(info["cycles"] / 333_333.33, rel=1e-6)
    assert info["peak_gops"] == pytest.approx(170.67, abs=0.01)
    assert 0 < info["gemm_utilization"] < 1
    timed = time_gemm(100, 300, 70, schedule="optimized")
    assert timed.cycles == run.report.cycles and timed.dram_bytes == run.report.dram_bytes
    json.dumps(info)


def test_traffic_is_the_analytic_minimum_when_everything_fits() -> None:
    """64^3 fits every buffer: ours must read A and B once and write C once."""
    r = time_gemm(64, 64, 64, schedule="tall_pipelined")
    assert r.dram_bytes["inp"] == 64 * 64 and r.dram_bytes["wgt"] == 64 * 64
    assert r.dram_bytes["out"] == 64 * 64 and r.dram_bytes["acc"] == 0
    bias = time_gemm(64, 64, 64, schedule="tall_pipelined", has_bias=True)
    assert bias.dram_bytes["acc"] == 64 * 4  # the bias row, loaded once
    t2 = time_gemm(64, 64, 64, schedule="tiled2")  # reloads both per 16x16x16 triple
    assert t2.dram_bytes["inp"] == t2.dram_bytes["wgt"] == 4 * 64 * 64


def test_schedules_rank_as_in_the_paper() -> None:
    shape = (256, 1152, 128)  # a ResNet-18 layer of Table 2
    t2, opt, ours = (time_gemm(*shape, schedule=s) for s in SCHEDULES)
    assert t2.cycles > 2 * opt.cycles
    assert opt.cycles > 1.5 * ours.cycles
    assert ours.percent_of_peak > 50
    narrow = time_gemm(*shape, schedule="optimized", config=VtaConfig.preset("zcu102",
                                                                            bus_bits=64))
    assert narrow.cycles > opt.cycles * 1.2  # B streaming is bandwidth-bound


def test_pynq_preset_is_slower() -> None:
    pynq = time_gemm(128, 128, 128, schedule="tall_pipelined", config=VtaConfig.preset("pynq"))
    zcu = time_gemm(128, 128, 128, schedule="tall_pipelined")
    assert pynq.clock_mhz == 100 and pynq.bus_bits == 64 and pynq.time_ms > 3 * zcu.time_ms


@pytest.mark.slow
def test_table2_targets_at_1024_cubed() -> None:
    ours = time_gemm(1024, 1024, 1024, schedule="tall_pipelined")
    opt = time_gemm(1024, 1024, 1024, schedule="optimized")
    assert ours.percent_of_peak >= 50 and opt.cycles > 1.5 * ours.cycles


@pytest.mark.slow
def test_big_bit_exact() -> None:
    a, b, bias = operands(1024, 576, 64, seed=3)
    for schedule in SCHEDULES:
        got = run_gemm(a, b, schedule=schedule, out="int32", bias=bias)
        assert np.array_equal(got.result, reference(a, b, bias, "int32", 0))


# ----- CLI -----
def test_cli_check_and_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code = main(["vta-gemm", "--m", "37", "--k", "50", "--n", "23", "--schedule", "tiled2",
                 "--bias", "--shift", "5", "--check", "--json", str(out), "--dump",
                 str(tmp_path / "p.txt")])
    assert code == 0
    info = json.loads(out.read_text())
    assert info["check"] == {"mismatches": 0, "equal": True}
    assert info["schedule"] == "tiled2" and info["cycles"] > 0 and info["dram_bytes"]["wgt"] > 0
    assert "FINISH" in (tmp_path / "p.txt").read_text()


def test_cli_check_failure_exits_2(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    import edgenn.cli.vta_gemm_cmd as cmd

    def broken(*args: object, **kwargs: object) -> GemmRun:
        run = run_gemm(*args, **kwargs)  # type: ignore[arg-type]
        run.result[0, 0] ^= 1
        return run

    monkeypatch.setattr(cmd, "run_gemm", broken)
    code = main(["vta-gemm", "--m", "16", "--k", "16", "--n", "16", "--check"])
    err = capsys.readouterr().err
    assert code == 2 and "1 of 256 outputs differ from numpy" in err and err.count("\n") == 1


def test_cli_bus_override(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vta-gemm", "--m", "32", "--k", "32", "--n", "32", "--preset", "ultra96",
                 "--bus-bits", "64", "--output-type", "int32", "--check"]) == 0
    assert "64-bit AXI" in capsys.readouterr().out
