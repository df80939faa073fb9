"""Export a trained SkipNet to ONNX (opset 13, TorchScript exporter) with its blocks recorded.

The file keeps its BatchNormalization nodes (``do_constant_folding=False``) so that importing
it goes through edgenn's batch-norm folding, and carries ``metadata_props``
``"edgenn.skippable_blocks"`` (see :mod:`edgenn.train.metadata`).
"""

from __future__ import annotations

import io
import os
import warnings
from typing import TYPE_CHECKING

import onnx

from edgenn.errors import EdgennError
from edgenn.train.metadata import METADATA_KEY, blocks_json
from edgenn.train.skipnet import SkipNet
from edgenn.train.torch_dep import require_torch
from edgenn.utils import atomic_write_bytes

if TYPE_CHECKING:
    import torch
else:
    torch = require_torch()

OPSET = 13


def to_onnx(model: SkipNet, image_hw: tuple[int, int] = (28, 28),
            doc: str = "") -> onnx.ModelProto:
    """The full network as an ONNX model: input ``input`` [1, C, H, W], output ``logits``."""
    model.eval()
    in_channels = model.in_channels
    dummy = torch.zeros(1, in_channels, *image_hw)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # why: dynamo=False (the classic opset-13 graph) is deprecated upstream but still the
        # exporter whose graphs edgenn's importer reads op for op; the warning is noise here.
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, (dummy,), buf, dynamo=False, opset_version=OPSET,
                          input_names=["input"], output_names=["logits"],
                          do_constant_folding=False)
    proto = onnx.load_from_string(buf.getvalue())
    names = model.block_names
    for name in names:
        if not any(n.name.startswith(f"/{name}/") for n in proto.graph.node):
            raise EdgennError(f"ONNX export: no node named /{name}/... (exporter naming changed?)")
    onnx.helper.set_model_props(proto, {METADATA_KEY: blocks_json(names)})
    if doc:
        proto.doc_string = doc
    onnx.checker.check_model(proto, full_check=True)
    return proto


def export_onnx(model: SkipNet, path: str | os.PathLike[str],
                image_hw: tuple[int, int] = (28, 28), doc: str = "") -> onnx.ModelProto:
    """Write :func:`to_onnx` to ``path`` atomically; returns the model."""
    proto = to_onnx(model, image_hw, doc)
    atomic_write_bytes(path, proto.SerializeToString())
    # why: atomic_write_bytes goes through mkstemp, whose file is private (0600); a model file
    # gets the ordinary permissions of a new file under the current umask
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)
    return proto
