"""Typed exceptions. Every message is one line naming the file, node, operator or shape."""


class EdgennError(Exception):
    """Base class: the CLI prints ``str(err)`` on one line and exits with code 2."""


class ModelFormatError(EdgennError):
    """A model file is corrupt, truncated or not the format it claims to be."""


class UnsupportedOperatorError(EdgennError):
    """An operator (or an attribute value of it) that edgenn does not implement."""


class GraphValidationError(EdgennError):
    """The graph is inconsistent: a missing tensor, a shape or dtype mismatch."""


class ShapeError(EdgennError):
    """An input array does not have the shape or dtype the model declares."""


class PlanError(EdgennError):
    """The memory plan is invalid or does not fit the given arena."""


class DataError(EdgennError):
    """A data set file is missing or malformed."""


class ToolchainError(EdgennError):
    """A compiler (arm-none-eabi-gcc, host cc) is missing or fails to build generated code."""


class OutputError(EdgennError):
    """An output path cannot be written: a file where a folder goes, or a file edgenn did not
    generate that a build would overwrite (``edgenn.outputs``)."""
