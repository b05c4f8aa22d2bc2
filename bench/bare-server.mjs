// Bare server: what the two hot reads cost without the framework. node:http + pg, the HS256 token
// verified with node:crypto, and the project's own SQL, row shaping and summary function (from
// dist/), so the only difference from the service is what sits between the socket and the query.
// Usage: node bench/bare-server.mjs <database-url> <port> <jwt-secret> (or import handlers())
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { parseApplicationUsernames } from '../dist/customers/list-customers/application-usernames.js';
import { customersByNameSql } from '../dist/customers/list-customers/list-customers.sql.js';
import { customerInfo } from '../dist/customers/customer-info.js';
import { dayStart } from '../dist/common/day-index.js';
import { pageStartSql, transactionPageSql } from '../dist/transactions/list-transactions/list-transactions.sql.js';
import { toView } from '../dist/transactions/list-transactions/list-transactions.handler.js';
import { commissionOf, DEFAULT_COMMISSION } from '../dist/revenue/commission.js';
import { applyEntitlements, readGrantingTransactions } from '../dist/customers/list-customers/add-entitlements.js';

/** The token check and the two reads, shared with bench/nest-floor-server.mjs. */
export function handlers(url, secret) {
  // The service's pool: TypeORM's default of 10 connections (dataSourceOptions).
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // a KeyObject made once, as the service's JwtStrategy does (a Buffer key is imported on every createHmac)
  const key = createSecretKey(Buffer.from(secret));

  function principal(authorization) {
    const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    if (!token) return undefined;
    const [header, payload, signature] = token.split('.');
    const expected = createHmac('sha256', key).update(`${header}.${payload}`).digest();
    const given = Buffer.from(signature ?? '', 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    if (JSON.parse(Buffer.from(header, 'base64url').toString()).alg !== 'HS256') return undefined;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= Date.now() || typeof claims.app !== 'string') return undefined;
    return { appId: claims.app, scopes: new Set(String(claims.scope ?? '').split(' ')) };
  }

  const commission = commissionOf(DEFAULT_COMMISSION);

  async function customers(who, rawQuery) {
    const usernames = parseApplicationUsernames(rawQuery);
    const now = new Date();
    const { name, sql, params } = customersByNameSql({ appId: who.appId, skip: 0, limit: usernames.length, usernames, filters: {} }, now);
    // the customers and their entitlements' transactions at once, as the service reads them
    const [{ rows }, granting] = await Promise.all([
      pool.query({ name, text: sql, values: params }),
      readGrantingTransactions((n, text, values) => pool.query({ name: n, text, values }).then((r) => r.rows), who.appId, usernames),
    ]);
    const summaries = rows.map((row) => ({ applicationUsername: row.applicationUsername, customerInfo: customerInfo(row, now), receiptIds: row.receiptIds }));
    applyEntitlements(summaries, granting, now);
    return { rows: summaries, paging: { skip: 0, limit: usernames.length, total: rows.length } };
  }

  async function transactions(who, search) {
    const q = { appId: who.appId, skip: Number(search.get('skip') ?? 0), limit: Number(search.get('limit') ?? 100), filters: {} };
    const located = pageStartSql(q);
    const [start] = (await pool.query({ name: located.name, text: located.sql, values: located.params })).rows;
    const paging = { skip: q.skip, limit: q.limit, total: Number(start.total ?? 0) };
    if (start.day === null || q.limit === 0) return { rows: [], paging };
    const page = transactionPageSql(q, dayStart(start.day), q.skip - Number(start.before));
    const { rows } = await pool.query({ name: page.name, text: page.sql, values: page.params });
    return { rows: rows.map((row) => toView(row, commission, who.appId)), paging };
  }

  return { principal, customers, transactions };
}

const send = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [url, port, secret] = process.argv.slice(2);
  const { principal, customers, transactions } = handlers(url, secret);
  const server = http.createServer(async (req, res) => {
    try {
      const who = principal(req.headers.authorization);
      if (!who) return send(res, 401, '{"code":"token_invalid"}');
      const q = req.url.indexOf('?');
      const path = q === -1 ? req.url : req.url.slice(0, q);
      const rawQuery = q === -1 ? '' : req.url.slice(q + 1);
      if (path === '/v2/customers' && who.scopes.has('customers:read')) return send(res, 200, JSON.stringify(await customers(who, rawQuery)));
      if (path === '/v2/transactions' && who.scopes.has('transactions:read')) return send(res, 200, JSON.stringify(await transactions(who, new URLSearchParams(rawQuery))));
      send(res, 404, '{"code":"not_found"}');
    } catch (error) {
      send(res, 500, JSON.stringify({ error: String(error) }));
    }
  });
  server.listen(Number(port), '127.0.0.1', () => process.send?.('ready'));
  // exiting on its own writes a --cpu-prof profile (the bench stops it with SIGINT when profiling)
  process.on('SIGINT', () => process.exit(0));
}
