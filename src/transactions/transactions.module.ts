import { Module } from '@nestjs/common';
import { ListTransactionChangesHandler } from './list-transaction-changes/list-transaction-changes.handler.js';
import { ListTransactionsController } from './list-transactions/list-transactions.controller.js';
import { ListTransactionsHandler } from './list-transactions/list-transactions.handler.js';

@Module({ controllers: [ListTransactionsController], providers: [ListTransactionsHandler, ListTransactionChangesHandler] })
export class TransactionsModule {}
