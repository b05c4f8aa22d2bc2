import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Entitlement definitions (docs/entitlements.md): which products grant which entitlement, per
 * application. Configuration, not facts: GET /v2/customers applies the current definitions when it
 * reads, so a change applies at once and to the whole history, and a replay or a rebuild reaches the
 * same answers from the same log. Not a read-model table: a rebuild keeps it. An entitlement is the
 * set of its rows (at least one product); a product may grant several. Frozen SQL.
 */
export class Entitlements1766500000000 implements MigrationInterface {
  name = 'Entitlements1766500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE public.entitlement_products (
        app_id      text        NOT NULL,
        entitlement text        NOT NULL,
        product_id  text        NOT NULL,
        defined_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (app_id, entitlement, product_id)
      )`);
    await q.query(`CREATE INDEX entitlement_products_product_idx ON public.entitlement_products (app_id, product_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.entitlement_products`);
  }
}
