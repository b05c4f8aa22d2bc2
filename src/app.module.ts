import { DynamicModule, Module, type ModuleMetadata } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { AuthModule } from './auth/auth.module.js';
import { Clock, SystemClock } from './common/clock.js';
import { ProblemFilter } from './common/problem.filter.js';
import type { AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { CustomersModule } from './customers/customers.module.js';
import { EntitlementsModule } from './entitlements/entitlements.module.js';
import { DatabaseModule } from './database/database.module.js';
import { ReadReplicasModule } from './database/read-replicas.js';
import type { DatabaseServer } from './database/database-server.js';
import { HealthModule } from './health/health.module.js';
import { IngestionModule } from './ingestion/ingestion.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { TransactionsModule } from './transactions/transactions.module.js';
import { RevenueModule } from './revenue/revenue.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';
import { StoreNotificationsModule } from './store-notifications/store-notifications.module.js';
import { PurchasesModule } from './purchases/purchases.module.js';
import { FxModule } from './fx/fx.module.js';
import { ReconcileModule } from './reconcile/reconcile.module.js';

export type AppModuleOptions = { config: AppConfig; database: DatabaseServer; extraImports?: ModuleMetadata['imports']; clock?: Clock };

@Module({})
export class AppModule {
  static forRoot({ config, database, extraImports = [], clock = new SystemClock() }: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        ConfigModule.forRoot(config),
        DatabaseModule.forRoot(database, { statementTimeoutMs: config.statementTimeoutMs }),
        ReadReplicasModule,
        CqrsModule.forRoot(),
        AuthModule,
        CustomersModule,
        EntitlementsModule,
        TransactionsModule,
        RevenueModule,
        MetricsModule,
        IngestionModule.forRoot(config),
        HealthModule,
        WebhooksModule,
        StoreNotificationsModule,
        PurchasesModule,
        FxModule,
        ReconcileModule,
        ...extraImports,
      ],
      providers: [
        { provide: APP_FILTER, useClass: ProblemFilter },
        { provide: Clock, useValue: clock },
      ],
      exports: [Clock],
    };
  }
}
