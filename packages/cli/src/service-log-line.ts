/** How loud a service log line is; `other` for lines that are not JSON logs. */
export type LogSeverity = 'debug' | 'info' | 'warn' | 'error' | 'other';

/** A service log line made short enough for a terminal. */
export interface RenderedLogLine {
  readonly severity: LogSeverity;
  readonly text: string;
}

const PINO_LEVELS: ReadonlyArray<readonly [number, LogSeverity]> = [
  [50, 'error'],
  [40, 'warn'],
  [30, 'info'],
  [0, 'debug'],
];

const HIDDEN_FIELDS = new Set(['level', 'msg', 'message', 'time', 'timestamp', 'ts', 'pid', 'hostname', 'service', 'name']);

/**
 * Turns a JSON log line (`level` as a name or a pino number, `msg`, any other
 * fields) into `LEVEL msg key=value ...`; other lines (stack traces, plain
 * prints) pass through unchanged with severity `other`.
 */
export function renderServiceLogLine(line: string): RenderedLogLine {
  let record: Record<string, unknown>;
  try {
    const parsed: unknown = line.startsWith('{') ? JSON.parse(line) : undefined;
    if (typeof parsed !== 'object' || parsed === null) return { severity: 'other', text: line };
    record = parsed as Record<string, unknown>;
  } catch {
    return { severity: 'other', text: line };
  }
  const severity = severityOf(record['level']);
  const message = record['msg'] ?? record['message'] ?? '';
  const fields = Object.entries(record)
    .filter(([key]) => !HIDDEN_FIELDS.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  const label = severity === 'other' ? '' : `${severity.toUpperCase().padEnd(5)} `;
  return { severity, text: [`${label}${String(message)}`, ...fields].join(' ') };
}

function severityOf(level: unknown): LogSeverity {
  if (typeof level === 'number') return PINO_LEVELS.find(([floor]) => level >= floor)?.[1] ?? 'debug';
  if (typeof level !== 'string') return 'info';
  const name = level.toLowerCase();
  if (name === 'fatal' || name === 'error') return 'error';
  if (name === 'warn' || name === 'warning') return 'warn';
  if (name === 'debug' || name === 'trace') return 'debug';
  return 'info';
}
