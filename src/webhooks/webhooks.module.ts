import { Module } from '@nestjs/common';
import { WebhookDispatcher } from './webhook-dispatcher.js';

@Module({ providers: [WebhookDispatcher] })
export class WebhooksModule {}
