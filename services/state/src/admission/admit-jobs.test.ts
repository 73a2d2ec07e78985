import { describe, expect, it } from 'vitest';
import { parseIdempotencyKey, parseRequestDigest, validateJobSpec } from '@docket/contracts';
import { planAdmissions, type AdmitJobCommand } from './admit-jobs.js';

function command(subject: string, key: string, digestHex: string): AdmitJobCommand {
  return {
    subject,
    operation: 'docket.admission.v1.AdmissionService/SubmitJob',
    key: parseIdempotencyKey(key),
    digest: parseRequestDigest(digestHex.repeat(64).slice(0, 64)),
    ttlMs: 86_400_000,
    spec: validateJobSpec({ queue: 'default', input: {}, label: '', priority: 0, runAfter: undefined, maxAttempts: 0, initialBackoffMs: undefined, maxBackoffMs: undefined, lostAttemptPolicy: 'UNSPECIFIED' }),
  };
}

describe('planAdmissions', () => {
  it.each([
    { name: 'distinct keys each decide', items: [['ada', 'order-key-000001', 'a'], ['ada', 'order-key-000002', 'a']], leaders: 2, leaderOf: [0, 1] },
    { name: 'a repeated key follows its first item', items: [['ada', 'order-key-000001', 'a'], ['ada', 'order-key-000001', 'a'], ['ada', 'order-key-000002', 'b']], leaders: 2, leaderOf: [0, 0, 1] },
    { name: 'a repeated key with another digest still follows (and will conflict)', items: [['ada', 'order-key-000001', 'a'], ['ada', 'order-key-000001', 'b']], leaders: 1, leaderOf: [0, 0] },
    { name: 'the same key of two subjects are two scopes', items: [['ada', 'order-key-000001', 'a'], ['bob', 'order-key-000001', 'a']], leaders: 2, leaderOf: [0, 1] },
    { name: 'an empty batch plans nothing', items: [], leaders: 0, leaderOf: [] },
  ])('$name', ({ items, leaders, leaderOf }) => {
    const commands = items.map(([subject, key, digest]) => command(subject as string, key as string, digest as string));
    const plan = planAdmissions(commands);
    expect(plan.leaders).toHaveLength(leaders);
    expect(plan.leaderOf).toEqual(leaderOf);
    plan.leaderOf.forEach((leader, index) => {
      expect(plan.leaders[leader]?.key.reveal()).toBe(commands[index]?.key.reveal());
      expect(plan.leaders[leader]?.subject).toBe(commands[index]?.subject);
    });
  });
});
