"""Convergence plots: best latency found so far against the trial count (Figs 9-11 of
Cha, Kwon and Lee 2023, docs/references.md).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.utils import atomic_write_bytes

COLORS = {"grid": "tab:blue", "random": "tab:orange", "tpe": "tab:green"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def plot_convergence(curves: Mapping[str, Sequence[float] | Sequence[Sequence[float]]],
                     path: str | Path, title: str, *, baseline: float | None = None,
                     ylabel: str = "model latency estimate (ms)",
                     note: str | None = None) -> None:
    """One line per strategy: best-so-far after each trial.

    A strategy given several runs (a list of curves, e.g. one per seed) is drawn as their mean
    with a band from the minimum to the maximum. ``baseline`` draws the rule-based default.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for name, data in curves.items():
        nested = bool(data) and isinstance(data[0], Sequence)
        raw: list[Any] = list(data) if nested else [data]
        runs = [[float(v) for v in r] for r in raw if len(r)]
        if not runs:
            continue
        length = max(len(r) for r in runs)
        grid = np.array([r + [r[-1]] * (length - len(r)) for r in runs])
        x = np.arange(1, length + 1)
        color = COLORS.get(name)
        label = name if len(runs) == 1 else f"{name} (mean of {len(runs)} seeds)"
        ax.plot(x, grid.mean(axis=0), label=label, color=color, linewidth=1.6)
        if len(runs) > 1:
            ax.fill_between(x, grid.min(axis=0), grid.max(axis=0), color=color, alpha=0.15,
                            linewidth=0)
    if baseline is not None:
        ax.axhline(baseline, color="grey", linestyle="--", linewidth=1,
                   label=f"baseline (ACL-like default) {baseline:.2f} ms")
    ax.set_xlabel("trials per layer")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    if note:
        fig.text(0.01, -0.02, note, fontsize=7, color="dimgrey", ha="left", va="top")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
