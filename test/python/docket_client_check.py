"""Drives a running Docket cluster through plain grpcio and reports what it saw.

Run by test/python-client.test.ts with stubs generated from proto/ (their
directory in DOCKET_PY_STUBS). Prints one JSON object of observations on
stdout; the TypeScript test asserts on it, so this script only raises for
failures it cannot describe (a call that should have worked did not).

Environment: DOCKET_PY_STUBS, DOCKET_ADMISSION, DOCKET_EXECUTION,
DOCKET_EVENTS (host:port), DOCKET_USER_TOKEN, DOCKET_USER_SUBJECT,
DOCKET_WORKER_TOKEN, DOCKET_QUEUE (a queue name no other test uses).
"""

import json
import os
import queue as queues
import secrets
import sys
import threading
import time

sys.path.insert(0, os.environ["DOCKET_PY_STUBS"])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402
from google.protobuf import duration_pb2, json_format, struct_pb2  # noqa: E402
from google.rpc import error_details_pb2, status_pb2  # noqa: E402

from docket.admission.v1 import admission_service_pb2 as admission  # noqa: E402
from docket.admission.v1 import admission_service_pb2_grpc as admission_grpc  # noqa: E402
from docket.common.v1 import attempt_pb2, job_status_pb2, progress_pb2, retry_policy_pb2  # noqa: E402
from docket.events.v1 import event_service_pb2 as events  # noqa: E402
from docket.events.v1 import event_service_pb2_grpc as events_grpc  # noqa: E402
from docket.execution.v1 import execution_service_pb2 as execution  # noqa: E402
from docket.execution.v1 import execution_service_pb2_grpc as execution_grpc  # noqa: E402

import docket_contracts as contracts  # noqa: E402

SUBMIT_JOB = "docket.admission.v1.AdmissionService/SubmitJob"
ENV = os.environ
QUEUE = ENV["DOCKET_QUEUE"]
USER = (("authorization", "Bearer " + ENV["DOCKET_USER_TOKEN"]),)
WORKER = (("authorization", "Bearer " + ENV["DOCKET_WORKER_TOKEN"]),)
TIMEOUT = 10.0


def new_key():
    return "py-" + secrets.token_hex(16)


def new_operation_id():
    return "op_" + secrets.token_hex(16)


def struct_of(value):
    message = struct_pb2.Struct()
    message.update(value)
    return message


def error_info_of(error):
    """The ErrorInfo of a failed call, decoded from its grpc-status-details-bin trailer."""
    for key, value in error.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                return {"reason": info.reason, "domain": info.domain, "status_code": status.code}
    return None


def batch_result(result):
    """One SubmitJobs result: the job it names and whether it replayed, or the item's status with its ErrorInfo and BadRequest."""
    if result.WhichOneof("result") == "submitted":
        return {"job_id": result.submitted.job.id, "replayed": result.submitted.replayed}
    reason = None
    fields = []
    for detail in result.error.details:
        info = error_details_pb2.ErrorInfo()
        bad_request = error_details_pb2.BadRequest()
        if detail.Unpack(info):
            reason = info.reason
        elif detail.Unpack(bad_request):
            fields = [violation.field for violation in bad_request.field_violations]
    return {"code": result.error.code, "reason": reason, "fields": fields}


def status_reason(status):
    """The ErrorInfo reason of a google.rpc.Status (a worker session's error answer)."""
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info.reason
    return None


def work_session(stub, incarnation, queue, job_id):
    """Works `job_id` on one ExecutionService/Work stream: claim (waiting), a
    stale renewal, progress and the outcome as calls with ids, answered by id;
    then half-closes and reads the stream to its end."""
    outgoing = queues.Queue()

    def requests():
        while True:
            request = outgoing.get()
            if request is None:
                return
            yield request

    answers = stub.Work(requests(), metadata=WORKER, timeout=TIMEOUT * 2)
    seen = {"order": []}

    def answer_to(call_id):
        for answer in answers:
            seen["order"].append(answer.call_id)
            if answer.call_id == call_id:
                return answer
        raise RuntimeError("the session ended before answering call %d" % call_id)

    outgoing.put(
        execution.WorkRequest(
            call_id=1,
            claim_jobs=execution.ClaimJobsRequest(
                worker_incarnation=incarnation, queues=[queue], max_jobs=1,
                wait=duration_pb2.Duration(seconds=5), operation_id=new_operation_id(),
            ),
        )
    )
    claimed = answer_to(1)
    assignments = claimed.claim_jobs.assignments
    seen["claimed"] = [assignment.envelope.job_id for assignment in assignments]
    if not assignments or assignments[0].envelope.job_id != job_id:
        outgoing.put(None)
        return seen
    authority = assignments[0].authority
    ref = attempt_pb2.AttemptRef(
        attempt_id=authority.attempt_id, fence=authority.fence, worker_incarnation=authority.worker_incarnation
    )
    stale = attempt_pb2.AttemptRef(
        attempt_id=authority.attempt_id, fence=authority.fence + 1, worker_incarnation=authority.worker_incarnation
    )
    outgoing.put(execution.WorkRequest(call_id=2, renew_attempt=execution.RenewAttemptRequest(attempt=stale, operation_id=new_operation_id())))
    refused = answer_to(2)
    seen["stale"] = {
        "case": refused.WhichOneof("result"),
        "code": refused.error.code,
        "reason": status_reason(refused.error),
    }
    outgoing.put(
        execution.WorkRequest(
            call_id=3,
            report_progress=execution.ReportProgressRequest(
                attempt=ref, operation_id=new_operation_id(), progress=progress_pb2.Progress(completed_units=1, total_units=1)
            ),
        )
    )
    seen["progress"] = answer_to(3).WhichOneof("result")
    outgoing.put(
        execution.WorkRequest(
            call_id=4,
            report_outcome=execution.ReportOutcomeRequest(
                attempt=ref, operation_id=new_operation_id(), success=execution.SuccessOutcome(result=struct_of({"via": "session"}))
            ),
        )
    )
    outcome = answer_to(4)
    seen["outcome_status"] = job_status_pb2.JobStatus.Name(outcome.report_outcome.job.status)
    seen["result"] = json_format.MessageToDict(outcome.report_outcome.job.result)
    outgoing.put(None)
    try:
        for answer in answers:
            seen["order"].append(answer.call_id)
        seen["ended"] = "OK"
    except grpc.RpcError as error:
        seen["ended"] = error.code().name
    return seen


def event_dict(event):
    return {
        "job_id": event.job_id,
        "sequence": event.sequence,
        "type": event.type,
        "payload": json_format.MessageToDict(event.payload),
        "occurred_at": contracts.format_occurred_at(event.occurred_at.seconds, event.occurred_at.nanos),
        "previous_hash": event.previous_hash,
        "hash": event.hash,
    }


def stream_events(stub, job_id, after_sequence, on_frame=None):
    """Every frame of a StreamJobEvents call that ends by itself, summarised:
    frames as `page:<first>-<last>`, `progress` or `end` (heartbeats left out)."""
    frames = []
    sequences = []
    collected = []
    for frame in stub.StreamJobEvents(
        events.StreamJobEventsRequest(job_id=job_id, after_sequence=after_sequence), metadata=USER, timeout=TIMEOUT
    ):
        kind = frame.WhichOneof("frame")
        if kind == "page":
            page = frame.page.events
            frames.append("page:%d-%d" % (page[0].sequence, page[-1].sequence))
            for event in page:
                sequences.append(event.sequence)
                collected.append(event_dict(event))
        elif kind != "heartbeat":
            frames.append(kind)
        if on_frame:
            on_frame()
    return {"frames": frames, "sequences": sequences, "events": collected}


# RFC 8785 cases with known answers: ECMAScript number forms (appendix B)
# and the section 3.2.3 key ordering example, which UTF-16 order decides.
JCS_VECTORS = [
    (0.0, "0"),
    (-0.0, "0"),
    (3.0, "3"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (9007199254740992.0, "9007199254740992"),
    (295147905179352830000.0, "295147905179352830000"),
    (1e21, "1e+21"),
    (1e-7, "1e-7"),
    (0.000001, "0.000001"),
    (333333333.3333333, "333333333.3333333"),
    (-1.5e-9, "-1.5e-9"),
    (
        {"\u20ac": 1, "\r": 2, "\ufb33": 3, "1": 4, "\U0001f600": 5, "\u0080": 6, "\u00f6": 7},
        '{"\\r":2,"1":4,"\u0080":6,"\u00f6":7,"\u20ac":1,"\U0001f600":5,"\ufb33":3}',
    ),
    ({"b": [True, None, "\u0001\"\\"], "a": {}}, '{"a":{},"b":[true,null,"\\u0001\\"\\\\"]}'),
]


def jcs_failures():
    """The JCS vectors this implementation gets wrong (expected empty)."""
    return [
        {"value": repr(value), "expected": expected, "got": contracts.canonical_json(value)}
        for value, expected in JCS_VECTORS
        if contracts.canonical_json(value) != expected
    ]


def main():
    report = {"jcs_failures": jcs_failures()}
    admission_stub = admission_grpc.AdmissionServiceStub(grpc.insecure_channel(ENV["DOCKET_ADMISSION"]))
    execution_stub = execution_grpc.ExecutionServiceStub(grpc.insecure_channel(ENV["DOCKET_EXECUTION"]))
    events_stub = events_grpc.EventServiceStub(grpc.insecure_channel(ENV["DOCKET_EVENTS"]))

    # --- Admission: submit, replay, conflict (SPEC sections 2 and 3) ---
    key = new_key()
    # Numbers JCS must write the ECMAScript way, and keys whose UTF-16 order
    # differs from their code point order (U+1F600 sorts before U+FB33).
    job_input = {
        "count": 3,
        "ratio": 0.1,
        "tiny": 1e-7,
        "huge": 1e21,
        "negative": -2.5,
        "text": "caf\u00e9 \u2603 \"quoted\"\n",
        "\ufb33": "dalet",
        "\U0001f600": "grin",
        "nested": {"b": [1, 2.0, None, True], "a": {}},
    }
    request = admission.SubmitJobRequest(
        idempotency_key=key,
        queue=QUEUE,
        input=struct_of(job_input),
        label="python client check",
        priority=7,
        retry_policy=retry_policy_pb2.RetryPolicy(
            max_attempts=3,
            initial_backoff=duration_pb2.Duration(seconds=1, nanos=500_000_000),
            max_backoff=duration_pb2.Duration(seconds=30),
        ),
        lost_attempt_policy=retry_policy_pb2.LOST_ATTEMPT_POLICY_RETRY,
    )
    first = admission_stub.SubmitJob(request, metadata=USER, timeout=TIMEOUT)
    replay = admission_stub.SubmitJob(request, metadata=USER, timeout=TIMEOUT)
    job_id = first.job.id
    report["submit"] = {
        "job_id": job_id,
        "replayed": first.replayed,
        "status": job_status_pb2.JobStatus.Name(first.job.status),
        "has_expiry": first.HasField("idempotency_expires_at"),
    }
    report["replay"] = {
        "job_id": replay.job.id,
        "replayed": replay.replayed,
        "same_response": replay.job == first.job and replay.idempotency_expires_at == first.idempotency_expires_at,
    }
    changed = admission.SubmitJobRequest()
    changed.CopyFrom(request)
    changed.input.update({"count": 4})
    try:
        admission_stub.SubmitJob(changed, metadata=USER, timeout=TIMEOUT)
        report["conflict"] = {"code": "OK"}
    except grpc.RpcError as error:
        report["conflict"] = {"code": error.code().name, "error_info": error_info_of(error)}

    # --- SubmitJobs: one result per item, in order (SPEC section 14) ---
    batch_key = new_key()
    batch = admission_stub.SubmitJobs(
        admission.SubmitJobsRequest(
            items=[
                request,
                admission.SubmitJobRequest(idempotency_key=batch_key, queue=QUEUE, input=struct_of({"batch": 1})),
                admission.SubmitJobRequest(idempotency_key=new_key(), queue="Not A Queue"),
                admission.SubmitJobRequest(idempotency_key=batch_key, queue=QUEUE, input=struct_of({"batch": 1})),
            ]
        ),
        metadata=USER,
        timeout=TIMEOUT,
    )
    report["submit_jobs"] = [batch_result(result) for result in batch.results]

    # The request digest, recomputed from the request as sent (SPEC section 2).
    unkeyed = admission.SubmitJobRequest()
    unkeyed.CopyFrom(request)
    unkeyed.ClearField("idempotency_key")
    request_json = json_format.MessageToDict(unkeyed)
    computed_digest = contracts.request_digest(SUBMIT_JOB, ENV["DOCKET_USER_SUBJECT"], request_json)

    # --- ListJobs: several small pages until no next_page_token ---
    list_queue = QUEUE + "-list"
    listed_ids = [job_id]
    for index in range(5):
        submitted = admission_stub.SubmitJob(
            admission.SubmitJobRequest(idempotency_key=new_key(), queue=list_queue, input=struct_of({"index": index})),
            metadata=USER,
            timeout=TIMEOUT,
        )
        listed_ids.append(submitted.job.id)
    pages = []
    token = ""
    while True:
        page = admission_stub.ListJobs(
            admission.ListJobsRequest(page_size=2, page_token=token, filter=admission.JobFilter(queue=list_queue)),
            metadata=USER,
            timeout=TIMEOUT,
        )
        pages.append([job.id for job in page.jobs])
        token = page.next_page_token
        if not token or len(pages) > 10:
            break
    report["list"] = {"submitted": sorted(listed_ids[1:]), "pages": pages, "ended": not token}

    # --- A live stream opened before the worker starts ---
    # The worker starts only once the backlog (job.admitted) has arrived, so
    # everything after it reaches the stream live.
    live = {}
    tailing = threading.Event()

    def tail():
        try:
            live.update(stream_events(events_stub, job_id, 0, tailing.set))
        except grpc.RpcError as error:
            live["error"] = error.code().name
        finally:
            tailing.set()

    tail_thread = threading.Thread(target=tail)
    tail_thread.start()
    tailing.wait(TIMEOUT)

    # --- Worker: register, claim with wait, progress, success ---
    registered = execution_stub.RegisterWorker(
        execution.RegisterWorkerRequest(
            worker_name="py-check-" + secrets.token_hex(4), queues=[QUEUE], max_concurrency=1
        ),
        metadata=WORKER,
        timeout=TIMEOUT,
    )
    started = time.monotonic()
    claimed = execution_stub.ClaimJobs(
        execution.ClaimJobsRequest(
            worker_incarnation=registered.worker_incarnation,
            queues=[QUEUE],
            max_jobs=1,
            wait=duration_pb2.Duration(seconds=5),
            operation_id=new_operation_id(),
        ),
        metadata=WORKER,
        timeout=TIMEOUT,
    )
    worker = {
        "incarnation_prefix": registered.worker_incarnation[:4],
        "claim_seconds": round(time.monotonic() - started, 3),
        "claimed": [assignment.envelope.job_id for assignment in claimed.assignments],
    }
    if claimed.assignments:
        assignment = claimed.assignments[0]
        authority = assignment.authority
        ref = attempt_pb2.AttemptRef(
            attempt_id=authority.attempt_id, fence=authority.fence, worker_incarnation=authority.worker_incarnation
        )
        worker["input_matches"] = json_format.MessageToDict(assignment.envelope.input) == request_json["input"]
        for done in (1, 2):
            progressed = execution_stub.ReportProgress(
                execution.ReportProgressRequest(
                    attempt=ref,
                    operation_id=new_operation_id(),
                    progress=progress_pb2.Progress(completed_units=done, total_units=2, message="step %d" % done),
                ),
                metadata=WORKER,
                timeout=TIMEOUT,
            )
            worker["cancel_requested"] = progressed.cancel_requested
        outcome = execution_stub.ReportOutcome(
            execution.ReportOutcomeRequest(
                attempt=ref,
                operation_id=new_operation_id(),
                success=execution.SuccessOutcome(result=struct_of({"answer": 42, "from": "python"})),
            ),
            metadata=WORKER,
            timeout=TIMEOUT,
        )
        worker["outcome_status"] = job_status_pb2.JobStatus.Name(outcome.job.status)
        worker["result"] = json_format.MessageToDict(outcome.job.result)
    report["worker"] = worker

    # --- The worker session: the same work as calls on one Work stream ---
    session_queue = QUEUE + "-session"
    session_job = admission_stub.SubmitJob(
        admission.SubmitJobRequest(idempotency_key=new_key(), queue=session_queue, input=struct_of({"session": True})),
        metadata=USER,
        timeout=TIMEOUT,
    ).job.id
    session_worker = execution_stub.RegisterWorker(
        execution.RegisterWorkerRequest(
            worker_name="py-session-" + secrets.token_hex(4), queues=[session_queue], max_concurrency=1
        ),
        metadata=WORKER,
        timeout=TIMEOUT,
    )
    report["session"] = dict(
        work_session(execution_stub, session_worker.worker_incarnation, session_queue, session_job), job_id=session_job
    )

    tail_thread.join(TIMEOUT + 5)

    # --- Journal: served digest, Python digest, and the chain, verified here ---
    read = events_stub.ReadJobEvents(
        events.ReadJobEventsRequest(job_id=job_id, after_sequence=0, page_size=256), metadata=USER, timeout=TIMEOUT
    )
    journal = [event_dict(event) for event in read.events]
    ok, head, problem = contracts.verify_chain(journal, job_id, computed_digest)
    report["digest"] = {"served": read.request_digest, "computed": computed_digest}
    report["journal"] = {
        "latest_sequence": read.latest_sequence,
        "types": [event["type"] for event in journal],
        "chain_ok": ok,
        "chain_problem": problem,
        "head_hash": head,
        "first_previous_hash": journal[0]["previous_hash"] if journal else None,
    }
    # A deliberately wrong digest must break the chain at its first link:
    # the verification is not vacuous.
    wrong_ok, _, wrong_problem = contracts.verify_chain(journal, job_id, "f" * 64)
    report["journal"]["wrong_digest_rejected"] = (not wrong_ok) and wrong_problem == "hash of 1 does not recompute"

    live_ok = None
    if "events" in live:
        live_ok, _, _ = contracts.verify_chain(live["events"], job_id, computed_digest)
    report["live_stream"] = {
        "frames": live.get("frames"),
        "sequences": live.get("sequences"),
        "error": live.get("error"),
        "chain_ok": live_ok,
        "equals_journal": live.get("events") == journal,
    }

    # --- Resume after a given sequence: no gap, no duplicate ---
    resume_after = 2
    resumed = stream_events(events_stub, job_id, resume_after)
    anchor = journal[resume_after - 1]["hash"] if len(journal) >= resume_after else contracts.GENESIS_HASH
    resumed_ok, _, _ = contracts.verify_chain(resumed["events"], job_id, computed_digest, resume_after, anchor)
    report["resume"] = {
        "after": resume_after,
        "frames": resumed["frames"],
        "sequences": resumed["sequences"],
        "chain_ok": resumed_ok,
        "equals_journal_tail": resumed["events"] == journal[resume_after:],
    }

    json.dump(report, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
