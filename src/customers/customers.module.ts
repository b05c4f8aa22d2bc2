import { Module } from '@nestjs/common';
import { ListCustomerChangesHandler } from './list-customer-changes/list-customer-changes.handler.js';
import { ListCustomersController } from './list-customers/list-customers.controller.js';
import { ListCustomersHandler } from './list-customers/list-customers.handler.js';

@Module({ controllers: [ListCustomersController], providers: [ListCustomersHandler, ListCustomerChangesHandler] })
export class CustomersModule {}
