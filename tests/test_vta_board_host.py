"""The board-host model: named terms, what they count, and wall = device + host."""

from __future__ import annotations

import numpy as np
import pytest

from edgenn.backends.vta.board_host import BoardHost
from edgenn.backends.vta.errors import VtaError
from edgenn.backends.vta.gemm import run_gemm, time_gemm


def test_terms_count_instructions_bytes_and_launch() -> None:
    host = BoardHost(insn_ns=100.0, pack_ns_per_byte=2.0, flush_ns_per_byte=0.5, launch_us=7.0)
    terms = host.cost_ms(instructions=1000, packed_bytes=3000, unpacked_bytes=1000,
                         insn_bytes=16000, uop_bytes=400)
    assert terms == pytest.approx({"packing": 4000 * 2.0e-6,
                                   "instruction_generation": 1000 * 100.0e-6,
                                   "cache_flush": 16400 * 0.5e-6, "launch": 7.0e-3})


def test_report_wall_is_device_plus_host_terms() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (40, 72), dtype=np.int8)
    b = rng.integers(-128, 128, (72, 24), dtype=np.int8)
    r = run_gemm(a, b, schedule="optimized").report
    host = BoardHost()
    packed = 3 * 5 * 256 + 2 * 5 * 256  # A: 3 row tiles x 5 k blocks; B: 2 x 5 tiles
    expected = host.cost_ms(instructions=r.instructions, packed_bytes=packed,
                            unpacked_bytes=40 * 24, insn_bytes=r.dram_bytes["insn"],
                            uop_bytes=r.dram_bytes["uop"])
    assert r.board_host_ms == pytest.approx(expected)
    assert r.dram_bytes["insn"] == 16 * r.instructions  # 128-bit instructions
    assert r.wall_ms == pytest.approx(r.time_ms + sum(expected.values()))
    j = r.to_json()
    assert j["wall_ms"] == pytest.approx(r.wall_ms) and "instruction_generation" in j[
        "board_host_ms"]


def test_instruction_generation_separates_the_schedules() -> None:
    t2 = time_gemm(128, 256, 128, schedule="tiled2")
    opt = time_gemm(128, 256, 128, schedule="optimized")
    assert t2.instructions > 2 * opt.instructions
    gen = "instruction_generation"
    assert t2.board_host_ms[gen] / opt.board_host_ms[gen] == pytest.approx(
        t2.instructions / opt.instructions)
    assert t2.board_host_ms["packing"] == pytest.approx(opt.board_host_ms["packing"])


def test_negative_constants_are_refused() -> None:
    with pytest.raises(VtaError, match="insn_ns"):
        BoardHost(insn_ns=-1.0)
    provenances = {c["provenance"] for c in BoardHost().constants().values()}
    assert provenances <= {"assumed", "calibrated"}


def test_network_totals_keep_the_board_control_term_separate() -> None:
    from edgenn.backends.vta.network_report import LayerRecord, NetworkReport

    gemms = (time_gemm(64, 144, 32, schedule="tall_pipelined"),
             time_gemm(64, 288, 32, schedule="tall_pipelined"))
    layer = LayerRecord(0, "conv", "Conv2D", "vta", host_ms=1.5, gemms=gemms, mkn=(64, 144, 32))
    report = NetworkReport("m", "zcu102", "tall_pipelined", 333.3, 128, 1, (layer,))
    control = sum(ms for g in gemms for term, ms in g.board_host_ms.items() if term != "packing")
    totals = report.totals()
    assert totals["board_control_ms"] == pytest.approx(control) and control > 0
    assert totals["total_ms"] == pytest.approx(layer.vta_ms + 1.5)  # not folded into the total
    assert "modelled board CPU" in report.log()[-1]
