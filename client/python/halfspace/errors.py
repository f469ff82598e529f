"""The errors a call raises: one class per gRPC status code, each carrying
the server's message.

    try:
        client.get_model("absent")
    except halfspace.NotFound as e:
        print(e.message)

Every class derives from halfspace.Error, which derives from
grpc.RpcError and answers code() and details() as a failed gRPC call does,
so code written against grpc's exceptions keeps working.
"""

from typing import Dict, Optional, Sequence, Tuple

import grpc


class Error(grpc.RpcError):
    """A call the server (or the channel) refused; `code` is its
    grpc.StatusCode, `message` the server's explanation."""

    code_value: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None,
                 trailing_metadata: Sequence[Tuple[str, str]] = ()):
        super().__init__(message)
        self.message = message
        self.status = code if code is not None else self.code_value
        self._trailing_metadata = tuple(trailing_metadata)

    def code(self) -> grpc.StatusCode:
        return self.status

    def details(self) -> str:
        return self.message

    def trailing_metadata(self) -> Tuple[Tuple[str, str], ...]:
        return self._trailing_metadata

    def __str__(self) -> str:
        return "%s: %s" % (self.status.name, self.message)


class Cancelled(Error):
    code_value = grpc.StatusCode.CANCELLED


class Unknown(Error):
    code_value = grpc.StatusCode.UNKNOWN


class InvalidArgument(Error, ValueError):
    code_value = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(Error, TimeoutError):
    code_value = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(Error, LookupError):
    code_value = grpc.StatusCode.NOT_FOUND


class AlreadyExists(Error):
    code_value = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(Error):
    code_value = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(Error):
    code_value = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(Error):
    code_value = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(Error):
    code_value = grpc.StatusCode.ABORTED


class OutOfRange(Error):
    code_value = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(Error):
    code_value = grpc.StatusCode.UNIMPLEMENTED


class Internal(Error):
    code_value = grpc.StatusCode.INTERNAL


class Unavailable(Error):
    code_value = grpc.StatusCode.UNAVAILABLE


class DataLoss(Error):
    code_value = grpc.StatusCode.DATA_LOSS


class Unauthenticated(Error):
    code_value = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE: Dict[grpc.StatusCode, type] = {
    cls.code_value: cls for cls in (
        Cancelled, Unknown, InvalidArgument, DeadlineExceeded, NotFound,
        AlreadyExists, PermissionDenied, ResourceExhausted,
        FailedPrecondition, Aborted, OutOfRange, Unimplemented, Internal,
        Unavailable, DataLoss, Unauthenticated)}

_BY_NUMBER: Dict[int, grpc.StatusCode] = {
    code.value[0]: code for code in grpc.StatusCode}


def error_for(code: grpc.StatusCode, message: str,
              trailing_metadata: Sequence[Tuple[str, str]] = ()) -> Error:
    """The Error of `code`'s class."""
    return _BY_CODE.get(code, Error)(message, code, trailing_metadata)


def from_rpc_error(error: grpc.RpcError) -> Error:
    """The Error a failed gRPC call `error` stands for."""
    if isinstance(error, Error):
        return error
    code = error.code() if hasattr(error, "code") else None
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else None
    trailers = (error.trailing_metadata()
                if hasattr(error, "trailing_metadata") else None)
    return error_for(code, details or str(error), trailers or ())


def from_status(status) -> Optional[Error]:
    """The Error an in-band google.rpc.Status stands for; None for OK."""
    if status.code == 0:
        return None
    code = _BY_NUMBER.get(status.code, grpc.StatusCode.UNKNOWN)
    return error_for(code, status.message)
