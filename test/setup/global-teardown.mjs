import { stopServices, withClient } from './global-setup.mjs';

export default async function globalTeardown() {
  const adminUrl = process.env.TEST_ADMIN_DATABASE_URL;
  if (adminUrl) {
    await withClient(adminUrl, async (client) => {
      const { rows } = await client.query(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`sr_%_${process.env.TEST_RUN_ID}%`]);
      for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }).catch((error) => console.error('test teardown: could not drop databases:', error.message));
  }
  await stopServices();
}
