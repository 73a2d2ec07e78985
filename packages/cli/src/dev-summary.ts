import type { ServiceName } from './service-names.js';

/** What `docket dev` reports once the system is healthy. */
export interface DevSummary {
  readonly urls: Readonly<Record<ServiceName, string>>;
  /** The web console's address, when it is served. */
  readonly consoleUrl: string | undefined;
  readonly databaseUrl: string;
  /** Set when the embedded Postgres is used: its data directory. */
  readonly embeddedPostgresDir: string | undefined;
  readonly secretsFile: string;
  readonly logsDir: string;
  readonly userToken: string;
  readonly workerToken: string;
  readonly tokenTtlDays: number;
  readonly healthyAfterMs: number;
  /** Set under `--replicas`: the front (nginx behind its port switch) the addresses above belong to, and the replicas behind it. */
  readonly front?: DevFrontSummary;
}

/** The nginx front of `docket dev --replicas`, as the summary shows it. */
export interface DevFrontSummary {
  readonly configFile: string;
  readonly accessLog: string;
  /** `host:port` of each replica, by service. */
  readonly replicas: Readonly<Record<ServiceName, readonly string[]>>;
  /** The port switch's configuration (HAProxy: HTTP/2 and HTTP/1.1 on each service's port). */
  readonly switchConfigFile: string;
}

const ROLES_OF: Record<ServiceName, string> = {
  admission: 'public API: submit, read, list, cancel, approve, delete',
  execution: 'worker API: claim, renew, progress, outcome',
  events: 'job event streams and the change feed',
  state: 'internal; the only service that talks to Postgres',
};

const ORDER: readonly ServiceName[] = ['admission', 'execution', 'events', 'state'];

/** The text printed when `docket dev` is ready: addresses, tokens, and a first call to try. */
export function formatDevSummary(summary: DevSummary): string {
  const seconds = (summary.healthyAfterMs / 1000).toFixed(1);
  const lines = [
    '',
    `Docket is running: all four services report SERVING (healthy after ${seconds} s).`,
    '',
    ...ORDER.map((name) => `  ${name.padEnd(10)} ${summary.urls[name].padEnd(24)} ${ROLES_OF[name]}`),
    ...(summary.consoleUrl === undefined ? [] : [`  ${'console'.padEnd(10)} ${summary.consoleUrl.padEnd(24)} web console: open it and paste the user token below`]),
    ...(summary.front === undefined ? [] : formatFront(summary.front)),
    `  ${'postgres'.padEnd(10)} ${summary.databaseUrl}`,
    summary.embeddedPostgresDir === undefined
      ? `             (DOCKET_DATABASE_URL)`
      : `             (embedded, data in ${summary.embeddedPostgresDir})`,
    '',
    `Development tokens (valid ${summary.tokenTtlDays} days, signed with the secret in ${summary.secretsFile}):`,
    `  user   (sub "dev")         ${summary.userToken}`,
    `  worker (sub "dev-worker")  ${summary.workerToken}`,
    '  more: docket token --subject <s> --role <user|admin|worker> [--ttl <seconds>]',
    '',
    'Try it:',
    `  export DOCKET_TOKEN=${summary.userToken}`,
    '  npx buf curl --http2-prior-knowledge --protocol grpc \\',
    '    -H "authorization: Bearer $DOCKET_TOKEN" \\',
    `    -d '{"idempotencyKey":"dev-example-0001","queue":"default","input":{"hello":"world"}}' \\`,
    `    ${summary.urls.admission}/docket.admission.v1.AdmissionService/SubmitJob`,
    '',
    `Logs: ${summary.logsDir} (warnings and errors also appear here). Ctrl-C stops everything.`,
    '',
  ];
  return `${lines.join('\n')}\n`;
}

function formatFront(front: DevFrontSummary): string[] {
  return [
    `  ${'nginx'.padEnd(10)} the four services' addresses above are the front's (HTTP/2 and HTTP/1.1), each call going to the next replica of:`,
    ...ORDER.map((name) => `  ${''.padEnd(10)}   ${name.padEnd(10)} ${front.replicas[name].join(' ')}`),
    `  ${''.padEnd(10)} config ${front.configFile}, port switch ${front.switchConfigFile}, access log ${front.accessLog}`,
  ];
}
