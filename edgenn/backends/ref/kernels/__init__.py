"""Reference kernels; importing this package registers every layer with ``@register``."""

from edgenn.backends.ref.kernels import (  # noqa: F401
    activations,
    conv,
    elementwise,
    fully_connected,
    fused_chain,
    matmul,
    normalization,
    pooling,
    quantize_ops,
    reduce,
    shape_ops,
    softmax,
    svm,
)
