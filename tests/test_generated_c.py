"""The committed generated C sources are what their Python source generates today.

``edgenn_sigmoid_table.h`` is TFLite's int16 sigmoid table written from
``edgenn.arith.int16_curves``: if the Python changes and the header is not regenerated
(``python -m edgenn.backends.cortexm.generated_c``), the C and the reference diverge.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from edgenn.arith.int16_curves import SIGMOID_TABLE_UINT16
from edgenn.backends.cortexm.generated_c import C_DIR, GENERATED


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_committed_file_is_regenerated_byte_for_byte(name: str) -> None:
    assert (C_DIR / name).read_bytes() == GENERATED[name]().encode()


def test_sigmoid_header_holds_the_python_table() -> None:
    # independent of the generator: parse the C initializer back
    text = (C_DIR / "edgenn_sigmoid_table.h").read_text()
    body = text[text.index("= {") + 3:text.index("};")]
    values = [int(v, 16) for v in re.findall(r"0x[0-9a-f]+", body)]
    assert values == SIGMOID_TABLE_UINT16.tolist()
    # sigmoid(i / 24) in Q0.16: TFLite's values lie within 1.2 units of the closed form
    exact = 65536 / (1 + np.exp(-np.arange(256) / 24))
    assert np.abs(np.asarray(values) - exact).max() <= 1.2
    assert values[0] == 32768 and np.all(np.diff(values) >= 0)


def test_no_other_copy_of_the_table() -> None:
    # the C sources include the header rather than spell the table again
    needle = "32768, 33451"
    copies = [p.name for p in C_DIR.glob("*.[ch]") if needle in p.read_text()]
    assert copies == []
