// Ceiling: plain node:http answering with the same response bytes from memory.
import { readFileSync } from 'node:fs';
import http from 'node:http';

const body = readFileSync(process.argv[2]);
const server = http.createServer((_, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
});
server.listen(Number(process.argv[3]), '127.0.0.1', () => process.send?.('ready'));
