"""Inputs as the model declares them (edgenn.ir.batch), through `edgenn run` and the API: an
array of the declared shape is one sample (rank-0 and rank-1 inputs included), one leading
axis beyond it a batch, the declared leading 1 given as N a batch; anything else one line
naming the input, its shape and the rules. CSV inputs as TFLite Micro's integration tests
store them; `run` says what it wrote."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_build import INT8, Op, T, add_options, build

from edgenn.api import compile_model
from edgenn.cli.main import main
from edgenn.frontends.tflite import load_tflite
from tests.cli_errors import error_line

INT16 = 7  # TensorType INT16


def _add_model(path: Path, shapes: tuple[tuple[int, ...], ...], typ: int = 0,
               scale: float | None = None) -> Path:
    """y = a + b (ADD, broadcasting b), every tensor of element type ``typ``."""
    q = {"scale": [scale], "zero_point": [0]} if scale is not None else {}
    path.write_bytes(build([T("a", shapes[0], typ, **q), T("b", shapes[1], typ, **q),
                            T("y", shapes[2], typ, **q)],
                           [Op(0, [0, 1], [2], add_options())], [0, 1], [2]))
    return path


@pytest.fixture()
def mixed(tmp_path: Path) -> Path:
    """Float a [1, 2, 3] + b [3]: like TFLite Micro's SEANet SUB tests, one input without a
    batch axis."""
    return _add_model(tmp_path / "mixed.tflite", ((1, 2, 3), (3,), (1, 2, 3)))


def _rand(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _run(tmp_path: Path, model: Path, *xs: np.ndarray) -> np.ndarray:
    paths = []
    for k, x in enumerate(xs):
        paths += ["--input", str(tmp_path / f"x{k}.npy")]
        np.save(tmp_path / f"x{k}.npy", x)
    assert main(["run", str(model), *paths, "-o", str(tmp_path / "y.npy")]) == 0
    return np.load(tmp_path / "y.npy")


# ------------------------------------------------------------------------------ the rule
def test_one_sample_of_the_declared_shapes(mixed: Path, tmp_path: Path) -> None:
    """[1, 2, 3] and [3]: one sample (today's 'different batch sizes [1, 3]'); the output in
    its declared shape, no batch axis added."""
    a, b = _rand((1, 2, 3)), _rand((3,), 1)
    y = _run(tmp_path, mixed, a, b)
    assert y.shape == (1, 2, 3)
    np.testing.assert_array_equal(y, a + b)


def test_a_leading_axis_beyond_the_declared_shape_is_the_batch(mixed: Path,
                                                               tmp_path: Path) -> None:
    a, b = _rand((4, 1, 2, 3)), _rand((4, 3), 1)
    y = _run(tmp_path, mixed, a, b)
    assert y.shape == (4, 1, 2, 3)
    np.testing.assert_array_equal(y, a + b[:, None, None, :])


def test_the_declared_leading_1_given_as_n(mixed: Path, tmp_path: Path) -> None:
    """[N, 2, 3] for a declared [1, 2, 3] (the historical form) and b as one sample, the same
    for every sample: outputs [N, 2, 3]."""
    a, b = _rand((5, 2, 3)), _rand((3,), 1)
    y = _run(tmp_path, mixed, a, b)
    assert y.shape == (5, 2, 3)
    np.testing.assert_array_equal(y, a + b)


@pytest.mark.parametrize("shape", [(), (4,)], ids=["rank0", "rank1"])
def test_rank_0_and_rank_1_inputs(tmp_path: Path, shape: tuple[int, ...]) -> None:
    model = _add_model(tmp_path / "v.tflite", (shape, shape, shape))
    a, b = _rand(shape), _rand(shape, 1)
    y = _run(tmp_path, model, a, b)
    assert y.shape == shape
    np.testing.assert_array_equal(y, a + b)
    a, b = _rand((3, *shape)), _rand((3, *shape), 1)
    y = _run(tmp_path, model, a, b)
    assert y.shape == (3, *shape)
    np.testing.assert_array_equal(y, a + b)


def test_the_api_reads_inputs_by_the_same_rule(mixed: Path) -> None:
    exe = compile_model(load_tflite(mixed.read_bytes(), name="mixed"), target="ref")
    a, b = _rand((1, 2, 3)), _rand((3,), 1)
    (one,) = exe.run(a, b)
    (batch,) = exe.run(np.stack([a, 2 * a]), np.stack([b, b]))
    assert one.shape == (1, 2, 3) and batch.shape == (2, 1, 2, 3)
    np.testing.assert_array_equal(batch[0], one)
    np.testing.assert_array_equal(batch[1], 2 * a + b)


def test_a_shape_no_rule_reads_names_input_shape_and_rules(
        mixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "a.npy", _rand((2, 3)))
    np.save(tmp_path / "b.npy", _rand((3,)))
    err = error_line(capsys, ["run", str(mixed), "--input", str(tmp_path / "a.npy"),
                              "--input", str(tmp_path / "b.npy"), "-o", str(tmp_path / "y.npy")])
    assert "a.npy" in err and "input 'a' is declared [1, 2, 3]; got [2, 3]" in err
    assert "[1, 2, 3] is one sample" in err and "[N, 1, 2, 3] a batch" in err
    assert "[N, 2, 3] a batch (the declared 1 as N)" in err
    assert not (tmp_path / "y.npy").exists()


def test_batches_of_different_sizes_name_each_rule(
        mixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "a.npy", _rand((4, 2, 3)))
    np.save(tmp_path / "b.npy", _rand((2, 3)))
    err = error_line(capsys, ["run", str(mixed), "--input", str(tmp_path / "a.npy"),
                              "--input", str(tmp_path / "b.npy"), "-o", str(tmp_path / "y.npy")])
    assert "disagree on the sample count" in err
    assert "'a' [4, 2, 3]: a batch (its declared 1 as N) of 4" in err
    assert "'b' [2, 3]: a batch (leading axis beyond its shape) of 2" in err


# ------------------------------------------------------------------------------ CSV
def _write_csv(path: Path, rows: list[np.ndarray]) -> Path:
    path.write_text("".join(",".join(str(v) for v in r.ravel()) + ",\n" for r in rows))
    return path


def test_csv_inputs_as_tflm_integration_tests_store_them(tmp_path: Path) -> None:
    """int16 ADD a [1, 2, 3, 8] + b [8], one CSV line of values per input (with TFLM's
    trailing comma), equal to TFLite Micro; one line per sample is a batch."""
    model = _add_model(tmp_path / "m16.tflite", ((1, 2, 3, 8), (8,), (1, 2, 3, 8)), INT16,
                       0.001)
    rng = np.random.default_rng(0)
    a = rng.integers(-20000, 20000, (2, 1, 2, 3, 8)).astype(np.int16)
    b = rng.integers(-20000, 20000, (2, 8)).astype(np.int16)
    argv = ["run", str(model), "--input", str(_write_csv(tmp_path / "a.csv", [a[0]])),
            "--input", str(_write_csv(tmp_path / "b.csv", [b[0]]))]
    assert main([*argv, "-o", str(tmp_path / "y.npy")]) == 0
    y = np.load(tmp_path / "y.npy")
    assert y.shape == (1, 2, 3, 8) and y.dtype == np.int16
    assert main([*argv, "-o", str(tmp_path / "y.csv")]) == 0
    text = (tmp_path / "y.csv").read_text()
    assert text.count("\n") == 1 and [int(v) for v in text.split(",")] == y.ravel().tolist()
    batch = ["run", str(model), "--input", str(_write_csv(tmp_path / "a2.csv", list(a))),
             "--input", str(_write_csv(tmp_path / "b2.csv", list(b))),
             "-o", str(tmp_path / "y2.npy")]
    assert main(batch) == 0
    y2 = np.load(tmp_path / "y2.npy")
    assert y2.shape == (2, 1, 2, 3, 8)
    np.testing.assert_array_equal(y2[0], y)
    pytest.importorskip("tflite_micro")
    from edgenn.oracles.tflm import tflm_run

    np.testing.assert_array_equal(y2, tflm_run(model.read_bytes(), a, b)[0])


def test_csv_with_a_count_no_rule_reads(mixed: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.csv").write_text("1,2,3,4,5\n")
    (tmp_path / "b.csv").write_text("1,2,3\n")
    err = error_line(capsys, ["run", str(mixed), "--input", str(tmp_path / "a.csv"),
                              "--input", str(tmp_path / "b.csv"), "-o", str(tmp_path / "y.npy")])
    assert "a.csv: 5 values on 1 line(s) for input 'a', declared [1, 2, 3]" in err
    assert "give 6 values for one sample" in err


def test_csv_values_outside_the_input_type(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    model = _add_model(tmp_path / "m8.tflite", ((2,), (2,), (2,)), INT8, 0.05)
    (tmp_path / "a.csv").write_text("1,300\n")
    (tmp_path / "b.csv").write_text("1,x\n")
    argv = ["run", str(model), "--input", str(tmp_path / "a.csv"), "--input",
            str(tmp_path / "b.csv"), "-o", str(tmp_path / "y.npy")]
    assert "a.csv: line 1: 300 is outside int8's range [-128, 127]" in error_line(capsys, argv)
    (tmp_path / "a.csv").write_text("1,3\n")
    assert "b.csv: line 1: 'x' is not an integer (int8 input)" in error_line(capsys, argv)


# ------------------------------------------------------------------------------ messages
def test_run_says_what_it_ran_and_wrote(mixed: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "a.npy", _rand((3, 1, 2, 3)))
    np.save(tmp_path / "b.npy", _rand((3, 3)))
    out = tmp_path / "out.npz"
    assert main(["run", str(mixed), "--input", str(tmp_path / "a.npy"), "--input",
                 str(tmp_path / "b.npy"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ran 3 samples on ref (a batch, the leading axis beyond the declared shape)" in text
    assert f"wrote {out}: output 'y' float32 [3, 1, 2, 3]" in text


def test_bench_and_validate_take_a_model_without_a_batch_axis(
        mixed: Path, tmp_path: Path) -> None:
    """bench runs the first sample in its declared shapes; validate's random batch and TFLite
    Micro read the same rule."""
    assert main(["bench", str(mixed), "--target", "ref", "--repeats", "1", "--warmup", "0",
                 "--json", str(tmp_path / "b.json")]) == 0
    pytest.importorskip("tflite_micro")
    assert main(["validate", str(mixed), "--target", "ref", "--random", "3"]) == 0


def test_cortex_m4_runs_an_input_without_a_batch_axis(tmp_path: Path) -> None:
    """The firmware takes every input in its declared shape: int8 a [1, 2, 3, 8] + b [8],
    one sample and a batch of 2, equal to the reference runtime."""
    model = _add_model(tmp_path / "m8.tflite", ((1, 2, 3, 8), (8,), (1, 2, 3, 8)), INT8, 0.05)
    graph = load_tflite(model.read_bytes(), name="m8")
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (2, 1, 2, 3, 8)).astype(np.int8)
    b = rng.integers(-128, 128, (2, 8)).astype(np.int8)
    ref = compile_model(graph, target="ref")
    m4 = compile_model(graph, target="cortex-m4", out_dir=tmp_path / "fw")
    (one,) = m4.run(a[0], b[0])
    assert one.shape == (1, 2, 3, 8)
    np.testing.assert_array_equal(one, ref.run(a[0], b[0])[0])
    np.testing.assert_array_equal(m4.run(a, b)[0], ref.run(a, b)[0])


@pytest.mark.parametrize("target", ["ref", "host", "vta"])
def test_every_target_reads_the_same_rule(tmp_path: Path, target: str) -> None:
    """int8 a [1, 2, 3, 8] + b [8] on each non-emulated target: one sample in its declared
    shape, a batch with the added axis, both equal to the reference runtime sample by
    sample (the cortex-m4 case is above)."""
    model = _add_model(tmp_path / "m8.tflite", ((1, 2, 3, 8), (8,), (1, 2, 3, 8)), INT8, 0.05)
    graph = load_tflite(model.read_bytes(), name="m8")
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (3, 1, 2, 3, 8)).astype(np.int8)
    b = rng.integers(-128, 128, (3, 8)).astype(np.int8)
    ref = compile_model(graph, target="ref")
    exe = compile_model(graph, target=target)
    batch = exe.run(a, b)[0]
    assert batch.shape == (3, 1, 2, 3, 8)
    for k in range(3):
        (one,) = exe.run(a[k], b[k])
        assert one.shape == (1, 2, 3, 8)
        np.testing.assert_array_equal(one, ref.run(a[k], b[k])[0])
        np.testing.assert_array_equal(batch[k], one)
