import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LIMITS, QUEUE_NAME_PATTERN, isValidQueueName } from './limits.js';

describe('LIMITS', () => {
  it('holds exactly the SPEC numbers and cannot be changed', () => {
    expect(LIMITS).toStrictEqual({
      eventPayloadBytes: 64 * 1024,
      jobInputBytes: 256 * 1024,
      resultBytes: 1024 * 1024,
      checkpointBytes: 1024 * 1024,
      submitJobsItems: 1_000,
      parentsPerJob: 100,
      parentResultsBytes: 1024 * 1024,
      eventBatch: 64,
      eventPageMax: 256,
      eventPageDefault: 100,
      listPageDefault: 50,
      listPageMax: 200,
      labelLength: 256,
      queueNameMax: 128,
      idempotencyKeyMin: 16,
      idempotencyKeyMax: 128,
      recoverableEffectsPage: 256,
      approvalPromptLength: 4096,
      effectExternalIdLength: 256,
      listPageBytes: 4_194_304,
      structDepth: 32,
      stringFieldBytes: 16_384,
      admissionRequestBytes: 2_097_152,
      executionRequestBytes: 8_388_608,
      eventsRequestBytes: 65_536,
      stateRequestBytes: 16_777_216,
    });
    expect(Object.isFrozen(LIMITS)).toBe(true);
  });
});

describe('isValidQueueName', () => {
  it('allows up to queueNameMax characters', () => {
    expect(QUEUE_NAME_PATTERN.source).toBe('^[a-z0-9][a-z0-9._-]{0,127}$');
    expect(isValidQueueName('q'.repeat(LIMITS.queueNameMax))).toBe(true);
    expect(isValidQueueName('q'.repeat(LIMITS.queueNameMax + 1))).toBe(false);
  });

  it('accepts lowercase names with . _ - after the first character', () => {
    for (const name of ['default', '0', 'emails.high-priority_v2', 'a-', 'a.']) {
      expect(isValidQueueName(name)).toBe(true);
    }
  });

  it('rejects everything else', () => {
    for (const name of ['', 'Default', '.hidden', '-x', '_x', 'a b', 'a/b', '../etc', 'ä', 'a\n', 7, null]) {
      expect(isValidQueueName(name)).toBe(false);
    }
  });

  it('agrees with a character-by-character reading of the rule', () => {
    const char = fc.constantFrom(...'az09._-A\u00e9 /'.split(''));
    fc.assert(
      fc.property(fc.array(char, { maxLength: 130 }), (chars) => {
        const name = chars.join('');
        const expected =
          name.length >= 1 &&
          name.length <= LIMITS.queueNameMax &&
          /[a-z0-9]/.test(name.charAt(0)) &&
          [...name].every((c) => /[a-z0-9._-]/.test(c));
        expect(isValidQueueName(name)).toBe(expected);
      }),
    );
  });
});
