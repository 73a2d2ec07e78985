"""A Docket worker in plain Python grpcio: register, claim, work, report.

    python3 worker.py

Environment: DOCKET_WORKER_TOKEN (a worker token; `npm start` prints one),
DOCKET_EXECUTION (default 127.0.0.1:7402), DOCKET_QUEUE (default
"default"), DOCKET_WORKER_NAME (default "python-example"),
DOCKET_PY_STUBS (default ./gen, see ../README.md).

The demo handler takes input {"steps": N, "fail": false}: it reports
progress for each step and succeeds with {"steps_done": N}, or fails
permanently (FAILURE_CLASS_INVALID_INPUT) when "fail" is true. Replace
`work` with your own code.

What a correct worker does, and this one does:
- every effecting call carries a fresh operation_id, and a retry of the
  same call after a timeout or UNAVAILABLE reuses it, so the call takes
  effect at most once;
- the lease is renewed at about a third of its duration, and a cancel
  asked for by the owner is honoured with the `cancelled` outcome;
- FAILED_PRECONDITION (STALE_AUTHORITY) means the job is no longer ours:
  stop working on it and report nothing.
"""

import os
import secrets
import time

from docket_calls import call_retrying, error_reason, target  # before the docket.* stubs: it puts them on sys.path

import grpc
from google.protobuf import duration_pb2, json_format, struct_pb2

from docket.common.v1 import attempt_pb2, failure_pb2, job_status_pb2, progress_pb2
from docket.execution.v1 import execution_service_pb2 as execution
from docket.execution.v1 import execution_service_pb2_grpc as execution_grpc

QUEUE = os.environ.get("DOCKET_QUEUE", "default")
METADATA = (("authorization", "Bearer " + os.environ["DOCKET_WORKER_TOKEN"]),)


class LostJob(Exception):
    """The attempt's authority is gone (lease expired, job settled elsewhere)."""


class Cancelled(Exception):
    """The job's owner asked for a cancel."""


class InvalidInput(Exception):
    """The input can never succeed: a permanent failure."""


def operation_id():
    return "op_" + secrets.token_hex(16)


def call(method, request, timeout=10):
    """Calls `method`, retrying the same request (same operation_id) while
    the outcome is unknown. A stale attempt becomes LostJob."""
    try:
        return call_retrying(method, request, METADATA, timeout)
    except grpc.RpcError as error:
        if error.code() == grpc.StatusCode.FAILED_PRECONDITION and error_reason(error) == "STALE_AUTHORITY":
            raise LostJob(error.details()) from error
        raise


class Attempt:
    """One claimed job: its authority, and the calls a handler makes."""

    def __init__(self, stub, assignment, lease_seconds):
        authority = assignment.authority
        self.stub = stub
        self.envelope = assignment.envelope
        self.ref = attempt_pb2.AttemptRef(
            attempt_id=authority.attempt_id, fence=authority.fence, worker_incarnation=authority.worker_incarnation
        )
        self.renew_every = max(lease_seconds / 3, 1)
        self.renewed_at = time.monotonic()

    def progress(self, done, total, message=""):
        """Reports progress, renews the lease when due; raises Cancelled if asked to stop."""
        reply = call(
            self.stub.ReportProgress,
            execution.ReportProgressRequest(
                attempt=self.ref,
                operation_id=operation_id(),
                progress=progress_pb2.Progress(completed_units=done, total_units=total, message=message),
            ),
        )
        cancel = reply.cancel_requested
        if time.monotonic() - self.renewed_at >= self.renew_every:
            renewed = call(
                self.stub.RenewAttempt, execution.RenewAttemptRequest(attempt=self.ref, operation_id=operation_id())
            )
            self.renewed_at = time.monotonic()
            cancel = cancel or renewed.cancel_requested
        if cancel:
            raise Cancelled()

    def report(self, **outcome):
        reply = call(
            self.stub.ReportOutcome,
            execution.ReportOutcomeRequest(attempt=self.ref, operation_id=operation_id(), **outcome),
        )
        return reply.job


def work(attempt, job_input):
    """The demo handler: N steps of 0.5 s each. Returns the job's result."""
    if job_input.get("fail"):
        raise InvalidInput("input asked to fail")
    steps = int(job_input.get("steps", 3))
    for step in range(1, steps + 1):
        time.sleep(0.5)
        attempt.progress(step, steps, "step %d of %d" % (step, steps))
    return {"steps_done": steps}


def run_one(stub, assignment, lease_seconds):
    attempt = Attempt(stub, assignment, lease_seconds)
    job_id = attempt.envelope.job_id
    job_input = json_format.MessageToDict(attempt.envelope.input)
    try:
        try:
            result = work(attempt, job_input)
            outcome = {"success": execution.SuccessOutcome(result=to_struct(result))}
        except Cancelled:
            outcome = {"cancelled": execution.CancelledOutcome()}
        except InvalidInput as error:
            outcome = {"failure": failure(failure_pb2.FAILURE_CLASS_INVALID_INPUT, str(error))}
        except LostJob:
            raise
        except Exception as error:  # noqa: BLE001 - any bug in the handler is a retryable failure
            outcome = {"failure": failure(failure_pb2.FAILURE_CLASS_INTERNAL, type(error).__name__)}
        job = attempt.report(**outcome)
        status = job_status_pb2.JobStatus.Name(job.status)
        kind = next(iter(outcome))
        print("%s attempt %d: %s -> %s" % (job_id, attempt.envelope.attempt_number, kind, status), flush=True)
    except LostJob as error:
        print("%s: no longer ours (%s); dropped" % (job_id, error), flush=True)


def failure(failure_class, message):
    return execution.FailureOutcome(failure_class=failure_class, message=message)


def to_struct(value):
    message = struct_pb2.Struct()
    message.update(value)
    return message


def main():
    stub = execution_grpc.ExecutionServiceStub(
        grpc.insecure_channel(target(os.environ.get("DOCKET_EXECUTION", "127.0.0.1:7402")))
    )
    # Not idempotent by design: a retried registration only supersedes the
    # incarnation its lost first try created.
    registered = stub.RegisterWorker(
        execution.RegisterWorkerRequest(
            worker_name=os.environ.get("DOCKET_WORKER_NAME", "python-example"), queues=[QUEUE], max_concurrency=1
        ),
        metadata=METADATA,
        timeout=10,
    )
    lease_seconds = registered.lease_duration.ToTimedelta().total_seconds()
    print(
        "worker %s (generation %d) on queue %r" % (registered.worker_incarnation, registered.generation, QUEUE),
        flush=True,
    )
    while True:
        claimed = call(
            stub.ClaimJobs,
            execution.ClaimJobsRequest(
                worker_incarnation=registered.worker_incarnation,
                queues=[QUEUE],
                max_jobs=1,
                wait=duration_pb2.Duration(seconds=30),
                operation_id=operation_id(),
            ),
            timeout=40,
        )
        for assignment in claimed.assignments:
            run_one(stub, assignment, lease_seconds)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
