import type { Client } from '@connectrpc/connect';
import { journalEventOf } from '@docket/client';
import { LIMITS } from '@docket/contracts';
import type { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import type { JournalPage } from './verify-journal.js';

/** The one RPC a journal reader needs, so tests can pass a stand-in. */
export type JournalReader = Pick<Client<typeof EventService>, 'readJobEvents'>;

/**
 * Reads a job's journal through `docket.events.v1.EventService/ReadJobEvents`
 * in pages of the largest size (256), each strictly after the last sequence
 * of the page before it, from sequence 0. Endless by design: the consumer
 * (`verifyJournalPages`) decides when the journal is complete or broken and
 * stops pulling. Server failures (DATA_LOSS, NOT_FOUND, UNAVAILABLE...) are
 * thrown as the client's `ConnectError`.
 */
export async function* readJournalPages(reader: JournalReader, jobId: string): AsyncGenerator<JournalPage, never> {
  let afterSequence = 0n;
  for (;;) {
    const response = await reader.readJobEvents({ jobId, afterSequence, pageSize: LIMITS.eventPageMax });
    const events = response.events.map(journalEventOf);
    yield { events, latestSequence: response.latestSequence };
    afterSequence = events.at(-1)?.sequence ?? afterSequence;
  }
}
