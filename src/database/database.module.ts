import { DynamicModule, Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options.js';
import type { DatabaseServer } from './database-server.js';
import { runMigrations } from './migrate.js';

export const DATABASE_SERVER = Symbol('DATABASE_SERVER');

@Global()
@Module({})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(DATABASE_SERVER) private readonly server: DatabaseServer) {}

  static forRoot(server: DatabaseServer, options: { poolSize?: number; applicationName?: string; statementTimeoutMs?: number } = {}): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => dataSourceOptions(server.url, options),
          dataSourceFactory: async (opts) => {
            const dataSource = await new DataSource(opts!).initialize();
            const applied = await runMigrations(dataSource);
            if (applied.length > 0) new Logger('database').log(`applied migrations: ${applied.join(', ')}`);
            return dataSource;
          },
        }),
      ],
      providers: [{ provide: DATABASE_SERVER, useValue: server }],
      exports: [DATABASE_SERVER],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.server.stop();
  }
}
