"""Tandem's errors as Python exceptions.

Every failed C++ ``absl::Status`` reaching Python is raised as one of these,
with the status message as its text and the code's name in ``.code``::

    try:
        exe.run(main, feed={"x": bad})
    except tandem.InvalidArgumentError as e:   # also a ValueError
        print(e.code, e)                       # INVALID_ARGUMENT feed 'x' ...

=====================  =========================  ======================
status code            class                      also a
=====================  =========================  ======================
INVALID_ARGUMENT       InvalidArgumentError       ValueError
NOT_FOUND              NotFoundError              LookupError
RESOURCE_EXHAUSTED     ResourceExhaustedError     MemoryError
DATA_LOSS              DataLossError              IOError (OSError)
OUT_OF_RANGE           OutOfRangeError            IndexError
UNIMPLEMENTED          UnimplementedError         NotImplementedError
FAILED_PRECONDITION    FailedPreconditionError    -
UNAVAILABLE            UnavailableError           -
INTERNAL               InternalError              -
any other code         Error                      -
=====================  =========================  ======================

All of them derive from ``tandem.Error``.
"""

from tandem import _C


class Error(Exception):
    """Base of Tandem's exceptions; ``code`` is the status code's name."""

    code = "UNKNOWN"


class InvalidArgumentError(Error, ValueError):
    code = "INVALID_ARGUMENT"


class NotFoundError(Error, LookupError):
    code = "NOT_FOUND"


class ResourceExhaustedError(Error, MemoryError):
    code = "RESOURCE_EXHAUSTED"


class DataLossError(Error, IOError):
    code = "DATA_LOSS"


class OutOfRangeError(Error, IndexError):
    code = "OUT_OF_RANGE"


class UnimplementedError(Error, NotImplementedError):
    code = "UNIMPLEMENTED"


class FailedPreconditionError(Error):
    code = "FAILED_PRECONDITION"


class UnavailableError(Error):
    code = "UNAVAILABLE"


class InternalError(Error):
    code = "INTERNAL"


_BY_CODE = {
    cls.code: cls
    for cls in (InvalidArgumentError, NotFoundError, ResourceExhaustedError, DataLossError,
                OutOfRangeError, UnimplementedError, FailedPreconditionError, UnavailableError,
                InternalError)
}
_C._set_error_classes({**_BY_CODE, "": Error})

__all__ = ["Error"] + [cls.__name__ for cls in _BY_CODE.values()]
