"""Errors whose message is meant for the user: one line that names the column or parameter."""


class SynthError(ValueError):
    """Base class: the CLI prints these as a one-line cause, the app as a message."""


class DataError(SynthError):
    """A table cannot be read, or is not usable as a table."""


class SchemaError(SynthError):
    """A schema is malformed or disagrees with a table."""


class BudgetError(SynthError):
    """A privacy budget is invalid, or a mechanism would spend more than it allows."""


class ParameterError(SynthError):
    """A method or mechanism got a parameter it cannot use."""


class Cancelled(Exception):
    """Raised inside a fit when the caller's should_stop() turned true."""
