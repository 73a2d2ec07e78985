import { createContextKey, type HandlerContext } from '@connectrpc/connect';

/**
 * A way for a server-streaming handler to send a message without yielding
 * it: the message is written to the stream at once, as the stream's next
 * message, so a process that tells a thousand parked subscribers of one
 * change writes a thousand frames in one loop instead of resuming a
 * thousand generators (each resumption passes through every interceptor's
 * wrapper, tens of microseconds a message).
 *
 * A handler offers only while nothing it yielded is still on its way to
 * the writer, so that an offered message can never overtake a yielded
 * one: while its own code runs (the writer asks a generator for the next
 * message only after writing the last, and no interceptor reads ahead of
 * it), or while it waits parked between two messages. The sink refuses
 * (`false`, nothing written)
 * when the stream cannot take the message now: it is ending, the client
 * has not drained what it was sent, or the writer is busy with a yielded
 * message. A refused message is then the handler's to yield as usual,
 * so back-pressure and ordering stay the writer's.
 *
 * Only binary gRPC streams have one (`serveBinaryGrpc`); on any
 * other protocol {@link streamSinkOf} is undefined and the handler yields
 * everything. An interceptor that ends or filters a stream's messages must
 * guard offers the same way it guards yields ({@link guardedSink}; see the
 * token expiry in `authenticationInterceptor`).
 */
export interface StreamSink {
  /** Writes `message` now as the stream's next message; false (and nothing written) if the stream cannot take it now. */
  offer(message: object): boolean;
}

/** The current call's {@link StreamSink}, if its writer has one. */
export const streamSinkKey = createContextKey<StreamSink | undefined>(undefined, { description: 'docket stream sink' });

/** The sink of this call's response stream, or undefined if messages can only be yielded. */
export function streamSinkOf(ctx: HandlerContext): StreamSink | undefined {
  return ctx.values.get(streamSinkKey);
}

/** `sink`, refusing every offer once `open()` is false. */
export function guardedSink(sink: StreamSink, open: () => boolean): StreamSink {
  return { offer: (message) => open() && sink.offer(message) };
}
