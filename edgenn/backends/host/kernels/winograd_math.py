"""Winograd minimal filtering F(m x m, 3 x 3) (Lavin & Gray 2016): matrices and transforms.

``Y = A^T [(G g G^T) . (B^T d B)] A`` for a 3x3 filter ``g`` and a ``(m+2)^2`` input tile
``d``. The 1-D transforms are written out with the usual shared sub-expressions so each
2-D transform (columns, then rows) is a few adds and FMAs per element; the weight transform
``U = G g G^T`` runs once in numpy at prepare time (float64, then float32).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

G_MATRIX = {
    2: np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]]),
    4: np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                 [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]),
}


def weight_transform(weights: np.ndarray, m: int) -> np.ndarray:
    """Conv weights ``[Cout, 3, 3, Cin]`` -> ``U[(m+2)^2][Cin][Cout]`` (position-major)."""
    g = G_MATRIX[m]
    w = weights.astype(np.float64)  # [co, ky, kx, ci]
    u = np.einsum("ik,okxc,jx->ijco", g, w, g)  # [i, j, ci, co]
    t = m + 2
    return u.reshape(t * t, w.shape[3], w.shape[0]).astype(np.float32)


Emit1d = Callable[[Sequence[str], Sequence[str], str], list[str]]


def _bt2(d: Sequence[str], o: Sequence[str], typ: str) -> list[str]:
    return [f"const {typ} {o[0]} = {d[0]} - {d[2]};", f"const {typ} {o[1]} = {d[1]} + {d[2]};",
            f"const {typ} {o[2]} = {d[2]} - {d[1]};", f"const {typ} {o[3]} = {d[1]} - {d[3]};"]


def _bt4(d: Sequence[str], o: Sequence[str], typ: str) -> list[str]:
    p = o[0] + "_"
    return [
        f"const {typ} {p}a = {d[4]} - {d[2]} * 4.0f;",
        f"const {typ} {p}b = {d[3]} - {d[1]} * 4.0f;",
        f"const {typ} {p}c = {d[4]} - {d[2]};", f"const {typ} {p}d = ({d[3]} - {d[1]}) * 2.0f;",
        f"const {typ} {o[0]} = {d[4]} + {d[0]} * 4.0f - {d[2]} * 5.0f;",
        f"const {typ} {o[1]} = {p}a + {p}b;", f"const {typ} {o[2]} = {p}a - {p}b;",
        f"const {typ} {o[3]} = {p}c + {p}d;", f"const {typ} {o[4]} = {p}c - {p}d;",
        f"const {typ} {o[5]} = {d[5]} + {d[1]} * 4.0f - {d[3]} * 5.0f;",
    ]


def _at2(d: Sequence[str], o: Sequence[str], typ: str) -> list[str]:
    return [f"const {typ} {o[0]} = {d[0]} + {d[1]} + {d[2]};",
            f"const {typ} {o[1]} = {d[1]} - {d[2]} - {d[3]};"]


def _at4(d: Sequence[str], o: Sequence[str], typ: str) -> list[str]:
    p = o[0] + "_"
    return [
        f"const {typ} {p}a = {d[1]} + {d[2]};", f"const {typ} {p}b = {d[1]} - {d[2]};",
        f"const {typ} {p}c = {d[3]} + {d[4]};", f"const {typ} {p}d = {d[3]} - {d[4]};",
        f"const {typ} {o[0]} = {d[0]} + {p}a + {p}c;", f"const {typ} {o[1]} = {p}b + {p}d * 2.0f;",
        f"const {typ} {o[2]} = {p}a + {p}c * 4.0f;",
        f"const {typ} {o[3]} = {p}b + {p}d * 8.0f + {d[5]};",
    ]


INPUT_1D: dict[int, Emit1d] = {2: _bt2, 4: _bt4}
OUTPUT_1D: dict[int, Emit1d] = {2: _at2, 4: _at4}


def transform_2d(emit: Emit1d, src: str, dst: str, rows_in: int, rows_out: int,
                 typ: str) -> list[str]:
    """``dst = T src T^T`` for a ``rows_in`` square ``src{i}_{j}``: columns then rows.

    Outputs are ``dst{i}_{j}`` for ``i, j < rows_out``.
    """
    lines: list[str] = []
    tmp = dst + "t"
    for j in range(rows_in):  # columns: src[.][j] -> tmp[.][j]
        lines += emit([f"{src}{k}_{j}" for k in range(rows_in)],
                      [f"{tmp}{i}_{j}" for i in range(rows_out)], typ)
    for i in range(rows_out):  # rows: tmp[i][.] -> dst[i][.]
        lines += emit([f"{tmp}{i}_{k}" for k in range(rows_in)],
                      [f"{dst}{i}_{j}" for j in range(rows_out)], typ)
    return lines
