"""Docket's client-side contracts, written again in Python from SPEC.md alone.

An independent implementation of RFC 8785 canonical JSON (JCS), the request
digest (SPEC section 2) and the journal hash chain (SPEC section 6). It
shares no code with `packages/contracts`: if both agree on real server
output, the SPEC is precise enough for any client to recompute the values.
Standard library only.
"""

import datetime
import hashlib
import math
from decimal import Decimal
import struct

GENESIS_HASH = "0" * 64
CHAIN_DOMAIN_TAG = b"docket.job-event.chain"
CHAIN_VERSION = 0x01


def ecmascript_number(value):
    """A finite number as ECMAScript's Number::toString writes it (RFC 8785 3.2.2.3).

    `repr` gives the shortest digits that round-trip (as ECMAScript does);
    the layout (plain, fractional or exponent form) follows ECMA-262.
    """
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers")
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError("JCS has no encoding for NaN or infinity")
    if value == 0:
        return "0"  # also -0
    if value < 0:
        return "-" + ecmascript_number(-value)
    # repr is the shortest string that round-trips; Decimal splits it exactly
    # into digits and exponent: value = 0.<digits> x 10^n.
    parsed = Decimal(repr(value)).normalize().as_tuple()
    digits = "".join(str(digit) for digit in parsed.digits)
    n = len(digits) + parsed.exponent
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    sign = "+" if n - 1 >= 0 else "-"
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return head + "e" + sign + str(abs(n - 1))


def _utf16_key(key):
    return key.encode("utf-16-be")


# The characters RFC 8785 (3.2.2.2, as ECMAScript's JSON.stringify) writes
# as a two-character escape; any other control character is \u00xx.
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _string(value):
    out = ['"']
    for char in value:
        code = ord(char)
        escaped = _SHORT_ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif code < 0x20:
            out.append("\\u%04x" % code)
        elif 0xD800 <= code <= 0xDFFF:
            raise ValueError("lone surrogates have no UTF-8 encoding")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def canonical_json(value):
    """RFC 8785: no whitespace, object keys sorted by their UTF-16 code units."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (int, float)):
        return ecmascript_number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=_utf16_key)
        return "{" + ",".join(_string(key) + ":" + canonical_json(value[key]) for key in keys) + "}"
    raise TypeError("not a JSON value: %r" % type(value))


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def request_digest(operation, subject, request_json):
    """SPEC section 2: sha256(JCS({"operation", "subject", "request"})) in lowercase hex.

    `request_json` is the proto3 JSON of the request with idempotency_key
    cleared (MessageToDict with default options).
    """
    body = canonical_json({"operation": operation, "subject": subject, "request": request_json})
    return sha256_hex(body.encode("utf-8"))


def format_occurred_at(seconds, nanos):
    """RFC 3339 UTC with exactly three fractional digits, as the chain hashes it."""
    if nanos % 1_000_000:
        raise ValueError("occurred_at has sub-millisecond precision")
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (nanos // 1_000_000)


def chain_preimage(job_id, digest, sequence, previous_hash, event_type, payload, occurred_at):
    """SPEC section 6: tag, 0x00, version 0x01, then six length-prefixed fields."""
    fields = [
        job_id,
        digest,
        str(sequence),
        previous_hash,
        event_type,
        canonical_json({"payload": payload, "occurred_at": occurred_at}),
    ]
    out = bytearray(CHAIN_DOMAIN_TAG + b"\x00" + bytes([CHAIN_VERSION]))
    for field in fields:
        encoded = field.encode("utf-8")
        out += struct.pack(">I", len(encoded)) + encoded
    return bytes(out)


def verify_chain(events, job_id, digest, after_sequence=0, previous_hash=GENESIS_HASH):
    """Checks a run of events (dicts with job_id, sequence, type, payload,
    occurred_at, previous_hash, hash) against the link before it. Returns
    (ok, head_hash, problem) where problem names the first break."""
    head = previous_hash
    expected = after_sequence
    for event in events:
        expected += 1
        if event["job_id"] != job_id:
            return False, head, "job %s at %d" % (event["job_id"], expected)
        if event["sequence"] != expected:
            return False, head, "sequence %d where %d was expected" % (event["sequence"], expected)
        if event["previous_hash"] != head:
            return False, head, "previous_hash of %d is not the hash of %d" % (expected, expected - 1)
        preimage = chain_preimage(
            job_id, digest, event["sequence"], head, event["type"], event["payload"], event["occurred_at"]
        )
        if sha256_hex(preimage) != event["hash"]:
            return False, head, "hash of %d does not recompute" % expected
        head = event["hash"]
    return True, head, None
