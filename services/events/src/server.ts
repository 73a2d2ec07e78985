import { createClient } from '@connectrpc/connect';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { FeedCursorCodec, ServiceMetrics, startFrontServer, stateTransportOf, type Logger, type RunningServer } from '@docket/service-kit';
import { Gauge } from 'prom-client';
import type { EventsConfig } from './config.js';
import { JobSignalHub } from './domain/job-signal-hub.js';
import { journalPageReader } from './domain/journal-page.js';
import { SharedChangeFeed } from './domain/shared-change-feed.js';
import { SharedJournalReads } from './domain/shared-journal-reads.js';
import { SubscriberGauge } from './domain/subscriber-gauge.js';
import { eventServiceRoutes } from './routes/event-service.js';

/**
 * Starts the events service's server: EventService, health and reflection,
 * with the process's one change stream from the state service (the
 * {@link JobSignalHub}), its shared journal reads and its one walk of the
 * change feed, which every subscriber of the process shares. The returned
 * server's `shutdown` drains the server, then closes the change stream.
 */
export async function startEventsServer(config: EventsConfig, logger: Logger): Promise<RunningServer> {
  const stateTransport = stateTransportOf(config, 'events');
  const state = createClient(StateService, stateTransport);
  const gauge = new SubscriberGauge(logger);
  const hub = new JobSignalHub(state, logger, gauge, () => stateTransport.resetConnection());
  hub.start();
  const metrics = new ServiceMetrics('events');
  new Gauge({
    name: 'docket_stream_subscribers',
    help: 'Streams this events process serves (job_event_streams, change_feeds) and the state streams it holds for them (upstream_streams)',
    labelNames: ['resource'],
    registers: [metrics.registry],
    collect() {
      for (const [resource, count] of Object.entries(gauge.counts)) this.set({ resource }, count);
    },
  });
  return startFrontServer(config, {
    name: 'events',
    metrics,
    services: [EventService],
    routes: eventServiceRoutes({
      state,
      hub,
      reads: new SharedJournalReads(journalPageReader(state)),
      feed: new SharedChangeFeed(state, hub, logger),
      cursors: new FeedCursorCodec(config.cursorSecret, config.feedCursorTtlMs),
      heartbeatMs: config.heartbeatMs,
      gauge,
    }),
    allowedRoles: ['user', 'admin'],
    stateTransport,
    logger,
    close: () => hub.close(),
  });
}
