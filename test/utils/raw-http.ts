import net from 'node:net';

export type RawAnswer = {
  /** 0 when nothing came back before the socket closed or the wait ended. */
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Whether the server closed the connection within the wait. */
  closed: boolean;
  /** Milliseconds from the first byte sent to the answer's first byte (or to the end of the wait). */
  answeredAfterMs: number;
  closedAfterMs: number;
};

/**
 * One HTTP/1.1 exchange over a bare socket, so a test controls every byte and when it is sent:
 * `send` writes `head` (request line and headers) and then each `parts` item `everyMs` apart,
 * stopping once the server answers or closes. Resolves when the server closes or after `waitMs`.
 */
export function rawExchange(port: number, o: { head: string; parts?: (string | Buffer)[]; everyMs?: number; waitMs: number }): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let answeredAt = 0;
    let timer: NodeJS.Timeout | undefined;
    const finish = (closed: boolean) => {
      clearTimeout(wait);
      clearInterval(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const at = line.indexOf(':');
        if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0),
        headers,
        body: rest.join('\r\n\r\n'),
        closed,
        answeredAfterMs: (answeredAt || Date.now()) - started,
        closedAfterMs: Date.now() - started,
      });
    };
    const wait = setTimeout(() => finish(false), o.waitMs);
    socket.on('data', (d) => {
      if (!answeredAt) answeredAt = Date.now();
      chunks.push(d);
    });
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // The server may close while we still write: that is an answer too.
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    socket.write(o.head);
    const parts = [...(o.parts ?? [])];
    if (o.everyMs === undefined) {
      for (const part of parts) socket.write(part);
    } else {
      timer = setInterval(() => {
        const part = parts.shift();
        if (part === undefined || answeredAt || socket.destroyed) clearInterval(timer);
        else socket.write(part);
      }, o.everyMs);
    }
  });
}

/** The request line and headers of a POST with a JSON body of `length` bytes (or chunked when length is undefined). */
export function postHead(path: string, length: number | undefined, headers: Record<string, string> = {}): string {
  const all: Record<string, string> = {
    host: '127.0.0.1',
    'content-type': 'application/json',
    ...(length === undefined ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(length) }),
    ...headers,
  };
  return `POST ${path} HTTP/1.1\r\n${Object.entries(all)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
}

/** A chunk of a chunked body. */
export const chunk = (data: string | Buffer) =>
  Buffer.concat([Buffer.from(`${Buffer.byteLength(data).toString(16)}\r\n`), Buffer.from(data), Buffer.from('\r\n')]);
