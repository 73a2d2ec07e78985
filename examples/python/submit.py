"""Submit one Docket job from Python, safely retryable.

    python3 submit.py '{"steps": 5}'            # queue "default"
    python3 submit.py '{"steps": 5}' my-key-0001  # your own idempotency key

Environment: DOCKET_TOKEN (a user token; `npm start` prints one),
DOCKET_ADMISSION (default 127.0.0.1:7401), DOCKET_QUEUE (default
"default"), DOCKET_PY_STUBS (default ./gen, see ../README.md).

The idempotency key names the submission, not the attempt to send it: a
retry after a timeout or UNAVAILABLE reuses it, so the job is created at
most once and the retry gets the original answer back (replayed=true).
Changing the input under the same key is ALREADY_EXISTS, reason
IDEMPOTENCY_CONFLICT.
"""

import json
import os
import secrets
import sys

from docket_calls import call_retrying, error_reason, target  # before the docket.* stubs: it puts them on sys.path

import grpc
from google.protobuf import json_format, struct_pb2

from docket.admission.v1 import admission_service_pb2 as admission
from docket.admission.v1 import admission_service_pb2_grpc as admission_grpc


def main():
    job_input = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {"steps": 5}
    # 16 to 128 of [A-Za-z0-9._~-]; keep it if you may need to retry later.
    key = sys.argv[2] if len(sys.argv) > 2 else "submit-" + secrets.token_hex(16)
    payload = struct_pb2.Struct()
    payload.update(job_input)
    request = admission.SubmitJobRequest(
        idempotency_key=key, queue=os.environ.get("DOCKET_QUEUE", "default"), input=payload
    )
    metadata = (("authorization", "Bearer " + os.environ["DOCKET_TOKEN"]),)
    stub = admission_grpc.AdmissionServiceStub(
        grpc.insecure_channel(target(os.environ.get("DOCKET_ADMISSION", "127.0.0.1:7401")))
    )
    try:
        response = call_retrying(stub.SubmitJob, request, metadata)  # a retry: same request, same key
    except grpc.RpcError as error:
        sys.exit("SubmitJob failed: %s %s %s" % (error.code().name, error_reason(error) or "", error.details()))
    print("idempotency key:", key)
    print("replayed:", response.replayed)
    print(json.dumps(json_format.MessageToDict(response.job), indent=2))


if __name__ == "__main__":
    main()
