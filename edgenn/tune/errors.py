"""Errors a user can cause while tuning (one line each, like every ``EdgennError``)."""

from edgenn.errors import EdgennError


class TuningDatabaseError(EdgennError):
    """The tuning database URL is malformed, unreachable or not an edgenn database."""


class TuningError(EdgennError):
    """A tuning run cannot start: bad options, nothing to tune, unknown strategy."""
