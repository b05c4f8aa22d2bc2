import { Module } from '@nestjs/common';
import { StoreNotificationsModule } from '../store-notifications/store-notifications.module.js';
import { CordovaValidatorController } from './cordova-validator/cordova-validator.controller.js';
import { RecordPurchaseController } from './record-purchase/record-purchase.controller.js';
import { RecordPurchaseHandler } from './record-purchase/record-purchase.handler.js';

/** Purchases handed over by apps and their backends (docs/purchases.md). */
@Module({ imports: [StoreNotificationsModule], controllers: [RecordPurchaseController, CordovaValidatorController], providers: [RecordPurchaseHandler] })
export class PurchasesModule {}
