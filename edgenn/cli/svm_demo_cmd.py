"""``edgenn svm-demo``: a device learns digit classes it never saw, with an SVM head trained
on the device (SMO, one-vs-one) batch after batch. The firmware holds the int8 CNN and the
SVM head: the host stages raw images and labels only. It runs in the cycle-model emulator
(default: cycles per batch) or, with ``--board mps2-an386``, on the board's model in
qemu-system-arm (one boot for the whole scenario; no cycles)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from edgenn.backends.cortexm.targets import CORES
from edgenn.cli.console import console, progress, table
from edgenn.cli.options import add_out_dir_option, out_dir
from edgenn.errors import EdgennError
from edgenn.utils import atomic_write_bytes

CLOCK_HZ = 64e6  # the clock the millisecond columns assume
# why 400 in the emulator: the cycle model classifies ~45 digits a second, so the device's
# test digits set the run time (400: ~1.5 min on 2 cores, 2,000: ~8 min); QEMU runs the
# firmware ~8x faster and classifies all 2,000 in about a minute
DEFAULT_DEVICE_TEST = {"unicorn": 400, "qemu": 2000}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("svm-demo", help="on-device SVM training: learn classes never seen")
    p.add_argument("--known", default="0,1,2,3,4",
                   help="digits the factory head was trained on (the others are new)")
    p.add_argument("--capacity", type=int, default=100, help="training buffer, samples")
    p.add_argument("--steps", type=int, default=6, help="training steps (full buffers)")
    p.add_argument("--C", type=float, default=0.1, dest="C")
    p.add_argument("--target", default="cortex-m4", choices=tuple(CORES),
                   help="the emulated core running the CNN + SVM firmware")
    p.add_argument("--board", default="generic", metavar="BOARD",
                   help="generic (the cycle-model emulator's firmware, default) or mps2-an386 / "
                        "netduinoplus2 (a board application, run in qemu-system-arm)")
    p.add_argument("--emulator", choices=("unicorn", "qemu"), default=None,
                   help="unicorn (cycle model, --board generic) or qemu (a real board's model; "
                        "the default for a real board)")
    p.add_argument("--device-test", type=int, default=None, metavar="N",
                   help="evenly spaced test digits the device classifies after each step "
                        f"(default: {DEFAULT_DEVICE_TEST['unicorn']} in the emulator, "
                        f"all {DEFAULT_DEVICE_TEST['qemu']:,} in QEMU; 2000: the full "
                        "measurement)")
    p.add_argument("--no-device", action="store_true",
                   help="skip the emulated firmware (reference runtime only)")
    add_out_dir_option(p, "out/svm-demo", "the PNG and report.json")
    p.set_defaults(func=run)


def _known(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise EdgennError(f"--known takes digits separated by commas, got {text!r}") from None


def _emulator(board: str, emulator: str | None) -> str:
    """Where the firmware runs: unicorn for the generic board, qemu for a real one."""
    from edgenn.backends.cortexm.boards import get_board

    real = not get_board(board).is_generic
    chosen = emulator or ("qemu" if real else "unicorn")
    if (chosen == "qemu") != real:
        runs = ("a real board's application (--board mps2-an386)" if chosen == "qemu"
                else "the generic firmware (--board generic)")
        raise EdgennError(f"--emulator {chosen} runs {runs}, not --board {board}")
    return chosen


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.2f}%"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def run(args: argparse.Namespace) -> int:
    from edgenn.train.svm.demo import run_scenario
    from edgenn.train.svm.plot import plot_demo

    if args.capacity < 2 or args.steps < 1:
        raise EdgennError(f"--capacity {args.capacity} must be >= 2 and --steps {args.steps} >= 1")
    device = not args.no_device
    emulator = _emulator(args.board, args.emulator)
    n_test = DEFAULT_DEVICE_TEST[emulator] if args.device_test is None else args.device_test
    what = "host steps (then one QEMU boot)" if emulator == "qemu" else "learning on the device"
    with progress(what, args.steps + 1) as advance:
        report = run_scenario(_known(args.known), args.capacity, args.steps, args.C,
                              device=device, on_step=lambda _: advance(), core=args.target,
                              device_test=n_test, emulator=emulator, board=args.board)
    _print_accuracy(report, device)
    if device and emulator == "qemu":
        _print_board(report)
    elif device:
        _print_costs(report)
    with out_dir(args) as out:
        plot_demo(report, out / "accuracy.png")
        atomic_write_bytes(out / "report.json", json.dumps(report.to_dict(), indent=2).encode())
    final = Path(args.out_dir)
    console.print(f"wrote {final / 'accuracy.png'}, {final / 'report.json'}")
    return 0


def _print_accuracy(report: Any, device: bool) -> None:
    columns = ["step", "field samples", "carried", f"known {report.known}", f"new {report.new}",
               "all"]
    if device:
        columns = [*columns[:3], "host-fed all (2,000)", "host-fed known", "host-fed new",
                   "host-fed all", "device known", "device new", "device all"]
    rows = []
    for s in report.steps:
        row: list[Any] = [s.step, s.samples_seen, s.carried]
        if device:
            row += [_pct(s.accuracy), _pct(s.host_accuracy_device_digits_known),
                    _pct(s.host_accuracy_device_digits_new), _pct(s.host_accuracy_device_digits),
                    _pct(s.device_accuracy_known), _pct(s.device_accuracy_new),
                    _pct(s.device_accuracy)]
        else:
            row += [_pct(s.accuracy_known), _pct(s.accuracy_new), _pct(s.accuracy)]
        rows.append(row)
    head = f"SVM head (int8 CNN features, buffer {report.capacity}, C={report.C:g}): test accuracy"
    if device:
        where = ("cycle-model emulator" if report.emulator == "unicorn"
                 else f"{report.board} in QEMU")
        n = report.device_test_digits
        subset = "all 2,000" if n == 2000 else f"{n:,} evenly spaced (1 in {2000 / n:g})"
        head += (f", host-fed on all 2,000 test digits, then host-fed and on the device "
                 f"({report.core} firmware: CNN + SVM, {where}) on {subset} of them; known "
                 f"{report.known}, new {report.new}")
    else:
        head += " on 2,000 digits, host-fed"
    console.print(table(head, columns, rows))
    first, last = report.steps[0], report.steps[-1]
    console.print(f"host-fed on 2,000 digits: new classes {100 * first.accuracy_new:.2f}% before, "
                  f"{100 * last.accuracy_new:.2f}% after {last.samples_seen} field samples; "
                  f"all classes {100 * first.accuracy:.2f}% -> {100 * last.accuracy:.2f}%")


def _print_board(report: Any) -> None:
    console.print(
        f"{report.board} (QEMU): one boot ran the whole scenario in {report.device_seconds:.1f} s "
        f"(the host staged the raw images, labels and commands; the device computed the "
        f"features, trained and classified). QEMU models no cycles: cycles per batch come from "
        f"the cycle-model emulator (--board generic). Firmware: RAM {report.device_ram_bytes:,} B "
        f"(CNN arena {report.cnn_arena_bytes:,} B), flash {report.device_flash_bytes:,} B.")
    console.print(f"device vs host-fed accuracy: at most {100 * report.max_accuracy_gap:.2f} "
                  f"points apart; same vote as the reference layer on "
                  f"{100 * report.device_agreement:.1f}% of the device's test digits")


def _print_costs(report: Any) -> None:
    rows = []
    for s in report.steps:
        ms = "-" if s.train_cycles is None else f"{1e3 * s.train_cycles / CLOCK_HZ:.1f}"
        rows.append([s.step, _num(s.extract_cycles), _num(s.append_cycles),
                     _num(s.train_cycles), ms, _num(s.classify_cycles),
                     "-" if s.max_abs_w_diff is None else f"{s.max_abs_w_diff:.1e}"])
    columns = ["step", "CNN cycles (batch)", "append cycles", "train cycles",
               f"train ms @{CLOCK_HZ / 1e6:.0f} MHz", "classify cycles / image",
               "max |w dev - ref|"]
    console.print(table(f"{report.core} per training batch ({report.capacity} images staged; "
                        "cycle model, zero wait states)", columns, rows))
    console.print(
        f"one image: CNN {_num(report.extract_cycles)} cycles, CNN + vote "
        f"{_num(report.inference_cycles)} cycles; RAM {report.device_ram_bytes:,} B = CNN arena "
        f"{report.cnn_arena_bytes:,} + SVM arrays {report.svm_ram_bytes:,} + stack and the "
        f"rest (stack used {report.stack_bytes:,} B); flash {report.device_flash_bytes:,} B")
    console.print(f"device vs host-fed accuracy: at most {100 * report.max_accuracy_gap:.2f} "
                  f"points apart; same vote as the reference layer on "
                  f"{100 * report.device_agreement:.1f}% of the device's test digits")
