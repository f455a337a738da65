/**
 * A loopback TCP proxy in front of the page's server that can partition the network: frozen in a
 * direction, it drops every byte that way, and while either way is frozen it passes no close on
 * (what a network partition does: neither side learns of it). `up` is page to server, `down`
 * server to page.
 */
import net from 'node:net';

export interface PartitionProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly frozen: { up: boolean; down: boolean };
  close(): void;
}

export async function partitionProxy(target: string): Promise<PartitionProxy> {
  const to = new URL(target);
  const frozen = { up: false, down: false };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(to.port), to.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('data', (d) => void (frozen.up || upstream.write(d)));
    upstream.on('data', (d) => void (frozen.down || client.write(d)));
    // Partitioned either way, a close is passed on neither way.
    const cut = (): boolean => frozen.up || frozen.down;
    upstream.on('close', () => void (cut() || client.destroy()));
    client.on('close', () => void (cut() || upstream.destroy()));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    frozen,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
