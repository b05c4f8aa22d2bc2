import { Module } from '@nestjs/common';
import { ListTransactionsController } from './list-transactions/list-transactions.controller.js';
import { ListTransactionsHandler } from './list-transactions/list-transactions.handler.js';

@Module({ controllers: [ListTransactionsController], providers: [ListTransactionsHandler] })
export class TransactionsModule {}
