// Submits a demo job with @docket/client and follows it live until it ends.
// Run it from the repository root with `npm start` and `npx docket worker`
// running, and DOCKET_TOKEN set to the user token `npm start` printed.
import { JobStatus, createClient } from '@docket/client';

const client = createClient({ url: 'http://127.0.0.1', token: process.env.DOCKET_TOKEN });
try {
  // No idempotency key given: the SDK makes one, and retries with it only
  // when the call may have succeeded, so this never admits two jobs.
  const { job, idempotencyKey } = await client.submit({ queue: 'default', input: { count: 5, delay_ms: 100 } });
  console.log(`submitted ${job.id} with key ${idempotencyKey}`);

  // The journal as it grows, hash chain checked frame by frame; it resumes
  // after a disconnect from the last sequence seen and ends with the job.
  for await (const frame of client.watch(job.id)) {
    if (frame.kind === 'event') console.log(`${frame.event.sequence} ${frame.event.type}`);
    else console.log(`progress ${frame.progress.completedUnits}/${frame.progress.totalUnits}`);
  }

  const finished = await client.result(job.id);
  console.log(`${finished.id} ended ${JobStatus[finished.status]}`);
} finally {
  client.close();
}
