"""The ONNX importer: float graphs and QDQ-quantized int8 graphs."""

from edgenn.frontends.onnx.loader import load_onnx, supported_onnx_ops

__all__ = ["load_onnx", "supported_onnx_ops"]
