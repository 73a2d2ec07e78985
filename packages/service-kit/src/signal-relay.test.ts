import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { SignalRelay } from './signal-relay.js';

describe('SignalRelay', () => {
  it('aborts every follower, and the shared signal, with the reason', () => {
    const relay = new SignalRelay();
    const followers = Array.from({ length: 3 }, () => relay.follow());
    const reason = new Error('stopping');
    expect(followers.some(({ signal }) => signal.aborted)).toBe(false);
    relay.abort(reason);
    expect(relay.signal.reason).toBe(reason);
    for (const { signal } of followers) expect(signal.reason).toBe(reason);
    expect(relay.followers).toBe(0);
  });

  it('forgets a released follower, whose signal then stays as it is', () => {
    const relay = new SignalRelay();
    const kept = relay.follow();
    const released = relay.follow();
    released.release();
    expect(relay.followers).toBe(1);
    relay.abort();
    expect(kept.signal.aborted).toBe(true);
    expect(released.signal.aborted).toBe(false);
  });

  it('gives a follower that comes after the abort an aborted signal, held nowhere', () => {
    const relay = new SignalRelay();
    relay.abort('gone');
    const late = relay.follow();
    expect(late.signal.reason).toBe('gone');
    expect(relay.followers).toBe(0);
    late.release();
  });

  it('adds and releases followers without listening on any shared signal', () => {
    const relay = new SignalRelay();
    const many = Array.from({ length: 10_000 }, () => relay.follow());
    expect(getEventListeners(relay.signal, 'abort')).toHaveLength(0);
    for (const { release } of many) release();
    expect(relay.followers).toBe(0);
  });
});
