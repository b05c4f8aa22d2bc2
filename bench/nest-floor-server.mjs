// The framework's floor: bench/bare-server.mjs's handlers (same token check, SQL, row shaping and
// serialisation) behind a NestJS controller on the FastifyAdapter, with nothing else: no guards, no
// query bus, no hooks, no metrics, no logger. What this costs beyond the bare server is what the fixed
// stack (NestJS on Fastify) costs before any of the service's own code runs (bench/run.mjs --floor).
// Usage: node bench/nest-floor-server.mjs <database-url> <port> <jwt-secret>
import 'reflect-metadata';
import { Controller, Get, HttpException, Module, Req } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { handlers } from './bare-server.mjs';

const [url, port, secret] = process.argv.slice(2);
const { principal, customers, transactions } = handlers(url, secret);

const rawQuery = (request) => (request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '');
const who = (request, scope) => {
  const found = principal(request.headers.authorization);
  if (!found || !found.scopes.has(scope)) throw new HttpException({ code: 'token_invalid' }, 401);
  return found;
};

// Decorators applied by hand: this file is run as it is, not compiled.
class CustomersController {
  list(request) {
    return customers(who(request, 'customers:read'), rawQuery(request));
  }
}
class TransactionsController {
  list(request) {
    return transactions(who(request, 'transactions:read'), new URLSearchParams(rawQuery(request)));
  }
}
for (const [cls, path] of [
  [CustomersController, 'v2/customers'],
  [TransactionsController, 'v2/transactions'],
]) {
  Reflect.decorate([Get()], cls.prototype, 'list', Object.getOwnPropertyDescriptor(cls.prototype, 'list'));
  Req()(cls.prototype, 'list', 0);
  Controller(path)(cls);
}
class FloorModule {}
Module({ controllers: [CustomersController, TransactionsController] })(FloorModule);

const app = await NestFactory.create(FloorModule, new FastifyAdapter(), { logger: false });
await app.listen(Number(port), '127.0.0.1');
process.send?.('ready');
// exiting on its own writes a --cpu-prof profile (the bench stops it with SIGINT when profiling)
process.on('SIGINT', () => process.exit(0));
