"""``edgenn svm-demo``: a device learns digit classes it never saw, with an SVM head trained
on the device (SMO, one-vs-one) batch after batch."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from edgenn.cli.console import console, progress, table
from edgenn.errors import EdgennError
from edgenn.utils import atomic_write_bytes


def add_parser(sub: Any) -> None:
    p = sub.add_parser("svm-demo", help="on-device SVM training: learn classes never seen")
    p.add_argument("--known", default="0,1,2,3,4",
                   help="digits the factory head was trained on (the others are new)")
    p.add_argument("--capacity", type=int, default=100, help="training buffer, samples")
    p.add_argument("--steps", type=int, default=6, help="training steps (full buffers)")
    p.add_argument("--C", type=float, default=0.1, dest="C")
    p.add_argument("--no-device", action="store_true",
                   help="skip the emulated Cortex-M4 firmware (reference runtime only)")
    p.add_argument("--out", default="out/svm-demo", help="directory for the PNG and report.json")
    p.set_defaults(func=run)


def _known(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise EdgennError(f"--known takes digits separated by commas, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from edgenn.train.svm.demo import run_scenario
    from edgenn.train.svm.plot import plot_demo

    if args.capacity < 2 or args.steps < 1:
        raise EdgennError(f"--capacity {args.capacity} must be >= 2 and --steps {args.steps} >= 1")
    out = Path(args.out)
    with progress("learning on the device", args.steps + 1) as advance:
        report = run_scenario(_known(args.known), args.capacity, args.steps, args.C,
                              device=not args.no_device, on_step=lambda _: advance())
    device = not args.no_device
    rows = []
    for s in report.steps:
        row: list[Any] = [s.step, s.samples_seen, f"{100 * s.accuracy_known:.2f}%",
                          f"{100 * s.accuracy_new:.2f}%", f"{100 * s.accuracy:.2f}%", s.carried]
        if device:
            row += [f"{s.train_cycles:,}" if s.train_cycles is not None else "-",
                    f"{1e3 * s.train_cycles / 64e6:.1f}" if s.train_cycles is not None else "-",
                    f"{s.max_abs_w_diff:.1e}" if s.max_abs_w_diff is not None else "-"]
        rows.append(row)
    columns = ["step", "field samples", f"known {report.known}", f"new {report.new}", "all",
               "carried"]
    if device:
        columns += ["M4 train cycles", "ms @64 MHz", "max |w dev - ref|"]
    console.print(table(f"SVM head (int8 CNN features, buffer {report.capacity}, C={report.C:g}): "
                        "test accuracy on 2,000 digits", columns, rows))
    first, last = report.steps[0], report.steps[-1]
    console.print(f"new classes: {100 * first.accuracy_new:.2f}% before, "
                  f"{100 * last.accuracy_new:.2f}% after {last.samples_seen} field samples; "
                  f"all classes {100 * first.accuracy:.2f}% -> {100 * last.accuracy:.2f}%")
    if device and report.device_agreement is not None:
        console.print(f"Cortex-M4 firmware (emulated, cycle model): one inference "
                      f"{report.inference_cycles:,.0f} cycles; same vote as the reference on "
                      f"{100 * report.device_agreement:.1f}% of 200 test digits; RAM "
                      f"{report.device_ram_bytes:,} B, flash {report.device_flash_bytes:,} B")
    plot_demo(report, out / "accuracy.png")
    atomic_write_bytes(out / "report.json", json.dumps(report.to_dict(), indent=2).encode())
    console.print(f"wrote {out / 'accuracy.png'}, {out / 'report.json'}")
    return 0
