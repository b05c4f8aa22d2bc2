import { Module } from '@nestjs/common';
import { ReconcileScheduler } from './reconcile-scheduler.js';

/** The scheduled reconciliation with the stores (RECONCILE_INTERVAL; off unless set). */
@Module({ providers: [ReconcileScheduler] })
export class ReconcileModule {}
