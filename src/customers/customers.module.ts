import { Module } from '@nestjs/common';
import { EraseCustomerController } from './erase-customer/erase-customer.controller.js';
import { ListCustomerChangesHandler } from './list-customer-changes/list-customer-changes.handler.js';
import { ListCustomersController } from './list-customers/list-customers.controller.js';
import { ListCustomersHandler } from './list-customers/list-customers.handler.js';

@Module({ controllers: [ListCustomersController, EraseCustomerController], providers: [ListCustomersHandler, ListCustomerChangesHandler] })
export class CustomersModule {}
