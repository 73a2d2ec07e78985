"""What submit.py and worker.py both do around a Docket call: find the
generated stubs, send the same request again while its outcome is unknown,
and read the reason of a refusal. Copy it along with either example.

Importing this module puts the stubs on sys.path (DOCKET_PY_STUBS, default
./gen beside this file, see ../README.md), so import it before any
`docket.*` stub module.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("DOCKET_PY_STUBS", os.path.join(HERE, "gen")))

import grpc  # noqa: E402
from google.rpc import error_details_pb2, status_pb2  # noqa: E402

# Failures after which the request may or may not have taken effect.
MAYBE_APPLIED = {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNKNOWN}

# Tries of one request, the first included.
TRIES = 5


def target(value):
    """host:port, also from a URL as `npm start` prints it."""
    return value.split("://", 1)[-1].rstrip("/")


def error_reason(error):
    """The google.rpc.ErrorInfo reason carried in the grpc-status-details-bin trailer."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in status_pb2.Status.FromString(value).details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return info.reason
    return None


def call_retrying(method, request, metadata, timeout=10):
    """Calls `method`, sending the same request (so the same idempotency key
    or operation_id, and the call takes effect at most once) again while
    the outcome is unknown, up to TRIES times with a growing pause. Raises
    the grpc.RpcError of a refusal, or of the last try."""
    for attempt in range(1, TRIES + 1):
        try:
            return method(request, metadata=metadata, timeout=timeout)
        except grpc.RpcError as error:
            if error.code() in MAYBE_APPLIED and attempt < TRIES:
                time.sleep(0.2 * 2**attempt)
                continue
            raise
