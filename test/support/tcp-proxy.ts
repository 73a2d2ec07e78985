import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** One relayed connection: the accepted socket and the one to the target. */
interface Relay {
  readonly downstream: Socket;
  upstream: Socket | undefined;
  /** Cut by a partition: bytes either way are read and dropped, and no end or reset is passed on. */
  cut: boolean;
}

/**
 * A TCP proxy a test controls, between a client (the state service, a
 * front service) and its server (Postgres, state), on 127.0.0.1.
 *
 * `partition()` makes the network between them fail silently, the way a
 * lost route or a dead peer does: every open connection goes half-open
 * for good (bytes are swallowed, nothing is answered, no FIN or RST is
 * ever passed on), and connections opened during the partition are
 * accepted but never reach the server. `heal()` lets new connections
 * through again; the connections cut earlier stay dead, as after a real
 * partition that outlived the peers' timeouts, until their owner gives
 * up on them (the server hears of that only once the partition heals). Since the proxy's own kernel acknowledges every byte and
 * keepalive probe, only an application-level check (a ping, a heartbeat,
 * an answer deadline) can notice a cut connection.
 */
export class TcpProxy {
  readonly #relays = new Set<Relay>();
  /** Server sides of cut connections whose clients gave up during the partition. */
  readonly #orphans = new Set<Socket>();
  #partitioned = false;

  private constructor(
    private readonly server: Server,
    private readonly target: { readonly host: string; readonly port: number },
    /** The port the proxy listens on. */
    readonly port: number,
  ) {}

  /** Starts a proxy to `host:port` on a free loopback port. */
  static async start(target: { readonly host: string; readonly port: number }): Promise<TcpProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
    const proxy = new TcpProxy(server, target, address.port);
    server.on('connection', (socket) => proxy.#accept(socket));
    return proxy;
  }

  /** A proxy in front of the server `url` names (postgres:// or http://), and `url` rewritten to go through it. */
  static async inFrontOf(url: string): Promise<{ proxy: TcpProxy; url: string }> {
    const parsed = new URL(url);
    const proxy = await TcpProxy.start({ host: parsed.hostname, port: Number(parsed.port) });
    parsed.hostname = '127.0.0.1';
    parsed.port = String(proxy.port);
    return { proxy, url: parsed.toString() };
  }

  /** How many relayed connections are open and not cut. */
  get liveConnections(): number {
    return [...this.#relays].filter((relay) => !relay.cut).length;
  }

  /** Cuts every open connection and holds every new one; see the class comment. */
  partition(): void {
    this.#partitioned = true;
    for (const relay of this.#relays) this.#cut(relay);
  }

  /**
   * Lets new connections through; the cut ones stay dead. The server now
   * learns that the clients which gave up meanwhile are gone (their
   * kernels would answer its retransmissions with a reset).
   */
  heal(): void {
    this.#partitioned = false;
    for (const upstream of this.#orphans) upstream.destroy();
    this.#orphans.clear();
  }

  /** Closes the proxy and every connection through it. */
  async close(): Promise<void> {
    this.heal();
    for (const relay of this.#relays) {
      relay.downstream.destroy();
      relay.upstream?.destroy();
    }
    this.#relays.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #accept(downstream: Socket): void {
    const relay: Relay = { downstream, upstream: undefined, cut: false };
    this.#relays.add(relay);
    const forget = (): void => {
      relay.downstream.destroy();
      this.#relays.delete(relay);
      // While the partition lasts the server cannot hear of the client's going; it does once the network is back.
      if (this.#partitioned && relay.upstream) this.#orphans.add(relay.upstream);
      else relay.upstream?.destroy();
    };
    downstream.on('error', () => {});
    // The client giving up on a connection, cut or not, takes its relay with it.
    downstream.on('close', forget);
    if (this.#partitioned) return this.#cut(relay);

    const upstream = createConnection({ host: this.target.host, port: this.target.port });
    relay.upstream = upstream;
    upstream.on('error', () => {});
    upstream.on('close', () => {
      if (!relay.cut) forget();
    });
    downstream.on('data', (chunk: Buffer) => {
      if (!relay.cut) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!relay.cut) downstream.write(chunk);
    });
    downstream.on('end', () => {
      if (!relay.cut) upstream.end();
    });
    upstream.on('end', () => {
      if (!relay.cut) downstream.end();
    });
  }

  #cut(relay: Relay): void {
    relay.cut = true;
    // Keep reading so the client's writes are acknowledged and dropped, as a silent network would lose them.
    relay.downstream.resume();
    // The server's side goes away quietly: it never learns of anything, and no answer of it reaches the client.
    relay.upstream?.removeAllListeners('data');
    relay.upstream?.on('data', () => {});
  }
}
