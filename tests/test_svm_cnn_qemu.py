"""The CNN + SVM firmware as a board application in qemu-system-arm (svm_cnn_qemu.py).

Oracle: the same firmware functions run in edgenn's cycle-model emulator (unicorn,
``SvmCnnDevice``), driven by the host with the same learn / train / classify steps. The two
builds differ only in their application (startup code, console, main): every vote and every
buffer count must be identical.
"""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np
import pytest

from edgenn.backends.cortexm.boards.qemu import FirmwareError, run_staged
from edgenn.backends.cortexm.codegen.svm_cnn_board import Command, Op, stage_image
from edgenn.errors import EdgennError

pytestmark = [
    pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                       reason="arm-none-eabi-gcc is not installed"),
    pytest.mark.skipif(shutil.which("qemu-system-arm") is None,
                       reason="qemu-system-arm is not installed"),
]

CLASSES = list(range(10))
CAPACITY = 24


@pytest.fixture(scope="module")
def setup() -> dict[str, Any]:
    from edgenn.backends.cortexm.svm_cnn_qemu import SvmCnnBoard
    from edgenn.data.mnist import mnist_split
    from edgenn.evaluate import images_to_input
    from edgenn.svm import penultimate_features
    from edgenn.train.svm.demo import quantized_cnn

    graph = quantized_cnn(calibration_digits=100)
    feature = penultimate_features(graph)
    x, y = mnist_split("train")
    idx = np.random.default_rng(7).permutation(len(y))[:60]
    xt, yt = mnist_split("test")
    board = SvmCnnBoard(graph, feature, CAPACITY, CLASSES, C=0.1)
    return {"graph": graph, "feature": feature, "board": board,
            "images": images_to_input(graph, x[idx]), "labels": y[idx],
            "test": images_to_input(graph, xt[::100]), "test_labels": yt[::100]}


def test_board_votes_equal_the_emulator(setup: dict[str, Any]) -> None:
    """learn 50 (two trainings on the way), classify, learn 10, train, classify: QEMU's
    votes and buffer counts equal the cycle-model emulator's running the same functions."""
    from edgenn.backends.cortexm.svm_cnn_device import SvmCnnDevice

    board, images, labels, test = (setup[k] for k in ("board", "images", "labels", "test"))
    script = board.script()
    staged_test = script.stage(test)
    first, second = script.stage(images[:50], labels[:50]), script.stage(images[50:],
                                                                         labels[50:])
    script.classify(staged_test)
    script.learn(first)
    script.classify(staged_test)
    script.learn(second)
    script.train()
    script.classify(staged_test)
    run = board.run(script)

    dev = SvmCnnDevice(setup["graph"], setup["feature"], CAPACITY, CLASSES, C=0.1)
    want_labels = [dev.classify_inputs(test).labels]
    want_counts = []
    for part in (slice(0, 50), slice(50, 60)):
        for i in range(part.start, part.stop):  # the board main's loop: train when full
            dev.learn(images[i:i + 1], labels[i:i + 1])
            if dev.count == CAPACITY:
                dev.fit_buffer()
        want_counts.append(dev.count)
        if part.start == 0:
            want_labels.append(dev.classify_inputs(test).labels)
    dev.fit_buffer()
    want_counts.append(dev.count)
    want_labels.append(dev.classify_inputs(test).labels)

    assert run.counts == want_counts
    assert len(run.labels) == 3
    for got, want in zip(run.labels, want_labels, strict=True):
        np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64))
    # trained: the last votes are mostly right (the factory head votes all zero at first)
    assert np.mean(run.labels[-1].astype(np.int64) == setup["test_labels"]) > 0.7
    mem = board.memory()
    assert mem["ram_bytes"] > mem["cnn_arena"] > 0 and mem["flash_bytes"] > 0


def test_firmware_errors_are_one_line(setup: dict[str, Any]) -> None:
    board, images = setup["board"], setup["images"]
    records = {"inputs": [], "outputs": [{"bytes": 4}]}
    bad_label = stage_image(board.input_bytes, images[:1], [99], [Command(Op.LEARN, 0, 1)])
    with pytest.raises(FirmwareError, match="edgenn_svm_append_input returned -10"):
        run_staged(board.elf, board.board, bad_label, 1, records, timeout=30)
    with pytest.raises(FirmwareError, match="staged input bytes differ from the CNN's: 5"):
        run_staged(board.elf, board.board, stage_image(5, np.zeros((1, 5), np.int8), [0], []),
                   0, records, timeout=30)
    with pytest.raises(EdgennError, match="names inputs 0..1 of the 1 staged"):
        stage_image(board.input_bytes, images[:1], [0], [Command(Op.CLASSIFY, 0, 2)])
    too_big = bytes(board.stage_room + 1)
    with pytest.raises(EdgennError, match="bytes to stage; mps2-an386 has"):
        run_staged(board.elf, board.board, too_big, 0, records)


def test_cli_refuses_a_board_on_the_cycle_model(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Any) -> None:
    from edgenn.cli.main import main

    assert main(["svm-demo", "--board", "mps2-an386", "--emulator", "unicorn",
                 "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--emulator unicorn runs the generic firmware" in err[0]


def test_demo_scenario_in_qemu(tmp_path: Any) -> None:
    """``edgenn svm-demo --board mps2-an386``: one boot, the device's votes equal the
    reference layer's and its accuracy is the host-fed one on the same digits."""
    import json

    from edgenn.cli.main import main

    assert main(["svm-demo", "--board", "mps2-an386", "--capacity", "30", "--steps", "2",
                 "--device-test", "60", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["emulator"], report["board"], report["device_test_digits"]) == (
        "qemu", "mps2-an386", 60)
    assert report["device_agreement"] == 1.0
    assert report["max_accuracy_gap"] <= 0.01
    first, last = report["steps"][0], report["steps"][-1]
    assert last["device_accuracy_new"] > 0.5 > first["device_accuracy_new"]
    assert last["host_accuracy_device_digits_new"] > 0.5
    assert last["train_cycles"] is None  # QEMU counts no cycles
    assert report["device_flash_bytes"] and report["device_ram_bytes"] and report["device_seconds"]
