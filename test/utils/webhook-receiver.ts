import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export type Received = {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  headers: IncomingHttpHeaders;
  message: { type: string; timestamp: string; data: Record<string, unknown> };
};
/** How to answer one request: a status, after a delay; `hang` never answers (until close). */
export type Answer = { status: number; delayMs?: number; body?: string; headers?: Record<string, string> } | 'hang';

/**
 * A webhook receiver on loopback that records every request and answers as the test says. Loopback
 * is internal: the service sends to it only with WEBHOOK_ALLOW_HOSTS=127.0.0.1 (or the name used).
 */
export async function startReceiver(answer: (r: Received, attempt: number) => Answer = () => ({ status: 204 })) {
  const received: Received[] = [];
  const attempts = new Map<string, number>();
  const open = new Set<() => void>();
  let connections = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const r: Received = {
        id: String(req.headers['webhook-id']),
        timestamp: String(req.headers['webhook-timestamp']),
        signature: String(req.headers['webhook-signature']),
        body,
        headers: req.headers,
        message: JSON.parse(body),
      };
      received.push(r);
      const n = (attempts.get(r.id) ?? 0) + 1;
      attempts.set(r.id, n);
      const a = answer(r, n);
      if (a === 'hang') {
        open.add(() => res.destroy());
        return;
      }
      setTimeout(() => res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers }).end(a.body ?? ''), a.delayMs ?? 0);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    /** TCP connections accepted, whether or not a request came over them. */
    get connections() {
      return connections;
    },
    /** Received and answered 2xx at least once, by webhook-id: the last copy. */
    verify(secret: string, r: Received): boolean {
      try {
        new Webhook(secret).verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature });
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      for (const end of open) end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
