import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { SignalRelay } from './signal-relay.js';

describe('SignalRelay', () => {
  it('calls every listener, and aborts the shared signal and every follower, with the reason', () => {
    const relay = new SignalRelay();
    const heard: unknown[] = [];
    relay.listen((reason) => heard.push(reason));
    const call = new AbortController();
    const followers = [relay.follow(call.signal), relay.follow(call.signal)];
    const reason = new Error('stopping');
    expect(followers.some((signal) => signal.aborted)).toBe(false);
    relay.abort(reason);
    expect(heard).toEqual([reason]);
    expect(relay.signal.reason).toBe(reason);
    for (const signal of followers) expect(signal.reason).toBe(reason);
    expect(relay.listeners).toBe(0);
  });

  it('forgets a listener that stopped, and a follower once its call ended', () => {
    const relay = new SignalRelay();
    const heard: unknown[] = [];
    const stop = relay.listen((reason) => heard.push(reason));
    const ended = new AbortController();
    const follower = relay.follow(ended.signal);
    expect(relay.listeners).toBe(2);
    stop();
    ended.abort();
    expect(relay.listeners).toBe(0);
    relay.abort('late');
    expect(heard).toEqual([]);
    expect(follower.aborted).toBe(false);
  });

  it('tells a listener or follower that comes after the abort at once, and holds neither', () => {
    const relay = new SignalRelay();
    relay.abort('gone');
    const heard: unknown[] = [];
    relay.listen((reason) => heard.push(reason))();
    expect(heard).toEqual(['gone']);
    expect(relay.follow(new AbortController().signal).reason).toBe('gone');
    expect(relay.listeners).toBe(0);
  });

  it('takes and drops ten thousand followers without a listener on any shared signal', () => {
    const relay = new SignalRelay();
    const calls = Array.from({ length: 10_000 }, () => new AbortController());
    for (const call of calls) relay.follow(call.signal);
    expect(getEventListeners(relay.signal, 'abort')).toHaveLength(0);
    expect(relay.listeners).toBe(10_000);
    for (const call of calls) call.abort();
    expect(relay.listeners).toBe(0);
  });
});
