// Baseline: the textbook endpoint over the same tables, TypeORM findAndCount({ skip, take }).
import http from 'node:http';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../dist/database/data-source-options.js';
import { TransactionEntity } from '../dist/database/entities.js';

const db = await new DataSource(dataSourceOptions(process.argv[2], { poolSize: 10, applicationName: 'baseline' })).initialize();
const repo = db.getRepository(TransactionEntity);
const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  const [rows, total] = await repo.findAndCount({
    where: { appId: url.searchParams.get('app') ?? 'big-app' },
    order: { occurredAt: 'ASC', transactionId: 'ASC' },
    skip: Number(url.searchParams.get('skip') ?? 0),
    take: Number(url.searchParams.get('limit') ?? 100),
  });
  const body = JSON.stringify({ rows, paging: { skip: Number(url.searchParams.get('skip') ?? 0), limit: rows.length, total } });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(body);
});
server.listen(Number(process.argv[3]), '127.0.0.1', () => process.send?.('ready'));
