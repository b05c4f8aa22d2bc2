import { Module } from '@nestjs/common';
import { AppleNotificationsController } from './apple/apple-notifications.controller.js';
import { GoogleNotificationsController } from './google/google-notifications.controller.js';
import { NotificationPublisher } from './notification-publisher.js';
import { StripeNotificationsController } from './stripe/stripe-notifications.controller.js';
import { VoidedPurchasesPoller } from './google/voided-purchases-poller.js';

/** Store notifications in: off (404) unless APPLE_APPS / GOOGLE_APPS / STRIPE_APPS configure an application. */
@Module({
  controllers: [AppleNotificationsController, GoogleNotificationsController, StripeNotificationsController],
  providers: [NotificationPublisher, VoidedPurchasesPoller],
  exports: [NotificationPublisher],
})
export class StoreNotificationsModule {}
