import type { DataSource } from 'typeorm';

/**
 * Which lines of an import source are done (public.import_journal, migration 1764600000000): a
 * line's events were published, or it was skipped with a reason. Keyed by application, kind and the
 * source's digest (the file's SHA-256, or the query's), so running the same file again skips what
 * is done and a changed file starts afresh. Failed lines are not recorded: the next run retries them.
 */
export class ImportJournal {
  constructor(
    private readonly db: DataSource,
    readonly appId: string,
    readonly kind: string,
    readonly sourceDigest: string,
  ) {}

  async done(keys: readonly string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const rows = (await this.db.query(
      `SELECT item_key FROM public.import_journal WHERE app_id = $1 AND kind = $2 AND source_digest = $3 AND item_key = ANY($4::text[])`,
      [this.appId, this.kind, this.sourceDigest, keys],
    )) as { item_key: string }[];
    return new Set(rows.map((r) => r.item_key));
  }

  async record(rows: readonly { key: string; line: number; outcome: 'imported' | 'skipped'; detail?: string }[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      `INSERT INTO public.import_journal (app_id, kind, source_digest, item_key, line, outcome, detail)
       SELECT $1, $2, $3, k, l, o, d FROM unnest($4::text[], $5::int[], $6::text[], $7::text[]) AS r(k, l, o, d)
       ON CONFLICT (app_id, kind, source_digest, item_key) DO NOTHING`,
      [
        this.appId,
        this.kind,
        this.sourceDigest,
        rows.map((r) => r.key),
        rows.map((r) => r.line),
        rows.map((r) => r.outcome),
        rows.map((r) => r.detail ?? null),
      ],
    );
  }

  /** A position to resume a paged source from (Apple's notification history token), or undefined. */
  async checkpoint(): Promise<string | undefined> {
    const rows = (await this.db.query(`SELECT checkpoint FROM public.import_checkpoint WHERE app_id = $1 AND kind = $2 AND source_digest = $3`, [
      this.appId,
      this.kind,
      this.sourceDigest,
    ])) as { checkpoint: string }[];
    return rows[0]?.checkpoint;
  }

  async saveCheckpoint(checkpoint: string): Promise<void> {
    await this.db.query(
      `INSERT INTO public.import_checkpoint (app_id, kind, source_digest, checkpoint) VALUES ($1, $2, $3, $4)
       ON CONFLICT (app_id, kind, source_digest) DO UPDATE SET checkpoint = excluded.checkpoint, updated_at = now()`,
      [this.appId, this.kind, this.sourceDigest, checkpoint],
    );
  }
}
