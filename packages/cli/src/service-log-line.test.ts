import { describe, expect, it } from 'vitest';
import { renderServiceLogLine } from './service-log-line.js';

describe('renderServiceLogLine', () => {
  it('renders a JSON log line as level, message and fields', () => {
    const line = JSON.stringify({ level: 'info', time: 1, msg: 'listening', url: 'http://127.0.0.1:1', port: 1 });
    expect(renderServiceLogLine(line)).toEqual({
      severity: 'info',
      text: 'INFO  listening url=http://127.0.0.1:1 port=1',
    });
  });

  it('understands pino numeric levels', () => {
    expect(renderServiceLogLine('{"level":50,"msg":"boom"}').severity).toBe('error');
    expect(renderServiceLogLine('{"level":40,"msg":"careful"}').severity).toBe('warn');
    expect(renderServiceLogLine('{"level":30,"msg":"ok"}').severity).toBe('info');
    expect(renderServiceLogLine('{"level":20,"msg":"noise"}').severity).toBe('debug');
  });

  it('passes other lines through unchanged', () => {
    expect(renderServiceLogLine('    at main (file.js:1:1)')).toEqual({
      severity: 'other',
      text: '    at main (file.js:1:1)',
    });
    expect(renderServiceLogLine('{not json').severity).toBe('other');
    expect(renderServiceLogLine('[1,2]').severity).toBe('other');
  });
});
