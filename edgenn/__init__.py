"""edgenn: make trained neural networks run fast and small on constrained devices."""

from edgenn.api import compile_model, load_model, quantize_model
from edgenn.errors import EdgennError
from edgenn.version import __version__

__all__ = ["EdgennError", "__version__", "compile_model", "load_model", "quantize_model"]
