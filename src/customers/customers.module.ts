import { Module } from '@nestjs/common';
import { ListCustomersController } from './list-customers/list-customers.controller.js';
import { ListCustomersHandler } from './list-customers/list-customers.handler.js';

@Module({ controllers: [ListCustomersController], providers: [ListCustomersHandler] })
export class CustomersModule {}
