// PostgreSQL SQLSTATE classes that pass: connection (08), serialisation/deadlock (40),
// resources (53), operator intervention such as a restart or a statement timeout (57), system (58).
const UNAVAILABLE_SQLSTATE = /^(08|40|53|57|58)/;
const UNAVAILABLE_NODE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * The database could not answer now (down, restarting, overloaded, too slow), as opposed to
 * refusing the request itself: worth retrying later, and a 503 to HTTP clients.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && (UNAVAILABLE_SQLSTATE.test(e.code) || UNAVAILABLE_NODE.has(e.code))) return true;
  return typeof e?.message === 'string' && /timeout|terminat|Connection|ECONNREFUSED|connect ECONN/i.test(e.message);
}
