"""PNG of the on-device learning scenario: test accuracy after each training step."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from edgenn.utils import atomic_write_bytes


def plot_demo(report: Any, path: Path) -> None:
    """Accuracy on known, new and all classes against field samples seen (atomic write)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seen = [s.samples_seen for s in report.steps]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for attr, label, style in (("accuracy_known", f"known classes {report.known}", "o-"),
                               ("accuracy_new", f"new classes {report.new}", "s-"),
                               ("accuracy", "all classes", "^-")):
        ax.plot(seen, [100 * getattr(s, attr) for s in report.steps], style, label=label)
    ax.set_xlabel("field samples trained on the device (SMO per full buffer)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"SVM head learns on the device (buffer {report.capacity}, C={report.C:g})")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
