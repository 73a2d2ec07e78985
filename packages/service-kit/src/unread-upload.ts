import * as http2 from 'node:http2';

/**
 * How much of an HTTP/2 request body answered before it was read (see
 * {@link finishUnreadUpload}) the server reads and drops before it resets
 * the stream instead.
 */
export const DISCARDED_UPLOAD_BYTES = 64 * 1024 * 1024;

/**
 * How long such an upload may send nothing before the server resets its
 * stream: a client that has sent its whole body but never ends the stream
 * (Connect's does not once its call is over) would otherwise hold it open.
 */
export const DISCARDED_UPLOAD_IDLE_MS = 1_000;

/**
 * Finishes an HTTP/2 request whose answer was complete before its body was
 * read to the end: a refusal for size (a gRPC length prefix or a message
 * over the limit), a refused token on a large upload, a handler that
 * answered early.
 *
 * Connect stops reading such a request and destroys its compatibility
 * request object, but that leaves the HTTP/2 stream open: paused, with a
 * flow-control window of body buffered and no WINDOW_UPDATE for the
 * client, whose stream waits forever to write the rest, holding its unsent
 * body. Every refused request leaked a stream this way until the client's
 * session was over its `maxSessionMemory` and refused every new stream
 * with ENHANCE_YOUR_CALM. Resetting the stream at once is not enough
 * either: a Node client never takes the unsent part of a destroyed
 * stream's writes off its session memory, so each reset still costs the
 * client's session, for good, whatever it had left to send.
 *
 * So once the answer is complete the rest of the body is read and dropped
 * (nothing is kept: the memory a request can make the server hold is still
 * the request limit), and the stream is reset with NO_ERROR, as RFC 9113
 * section 8.1 provides for a request whose complete response was sent,
 * when the client has sent nothing for {@link DISCARDED_UPLOAD_IDLE_MS}
 * (its body is all there, or it stalled) or more than
 * {@link DISCARDED_UPLOAD_BYTES} (the server stops paying for it). A
 * client that ends its stream closes it as usual.
 *
 * HTTP/2 only: over HTTP/1.1 such an answer says `connection: close`
 * (see {@link boundedNodeAdapter}), since the rest of the body would
 * otherwise stand in front of the next request on the connection.
 */
export function finishUnreadUpload(stream: http2.ServerHttp2Stream): void {
  // Node's compatibility API ends every response with trailers (an empty
  // frame when there are none): it asks for them once the body is written
  // and submits them on the following turn.
  stream.once('wantTrailers', () =>
    setImmediate(() => {
      if (stream.destroyed || stream.closed || stream.readableEnded) return;
      const reset = (): void => {
        if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
      };
      let idle = setTimeout(reset, DISCARDED_UPLOAD_IDLE_MS);
      stream.once('close', () => clearTimeout(idle));
      // The compatibility request's listener pushes into a request that is
      // gone and pauses the stream when the push is refused.
      stream.removeAllListeners('data');
      let discarded = 0;
      stream.on('data', (chunk: Buffer) => {
        discarded += chunk.byteLength;
        clearTimeout(idle);
        if (discarded > DISCARDED_UPLOAD_BYTES) reset();
        else idle = setTimeout(reset, DISCARDED_UPLOAD_IDLE_MS);
      });
      stream.resume();
    }),
  );
}
