import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { ConfigModule } from '../config/config.module.js';
import { CommanderExitCodes } from './exit-codes.js';
import { CustomersCommand, CustomersEraseCommand } from './customers.command.js';
import { ENTITLEMENT_SUBCOMMANDS, EntitlementsCommand } from './entitlements.command.js';
import { FxCommand, FxImportCommand } from './fx.command.js';
import { GenerateCommand } from './generate.command.js';
import { IMPORT_COMMANDS } from './import.command.js';
import { MoveToKafkaCommand } from './move-to-kafka.command.js';
import { OffsetsCommand, OffsetsResetCommand, OffsetsShowCommand } from './offsets.command.js';
import { PublishCommand } from './publish.command.js';
import { RebuildCommand } from './rebuild.command.js';
import { ReconcileCommand } from './reconcile.command.js';
import { SampleNotificationCommand } from './sample-notification.command.js';
import { TokenCommand } from './token.command.js';
import { WEBHOOK_SUBCOMMANDS, WebhooksCommand } from './webhooks.command.js';

@Module({})
export class CliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CliModule,
      imports: [ConfigModule.forRoot(config)],
      providers: [
        CommanderExitCodes,
        TokenCommand,
        PublishCommand,
        RebuildCommand,
        GenerateCommand,
        OffsetsCommand,
        OffsetsShowCommand,
        OffsetsResetCommand,
        WebhooksCommand,
        ...WEBHOOK_SUBCOMMANDS,
        SampleNotificationCommand,
        ...IMPORT_COMMANDS,
        CustomersCommand,
        CustomersEraseCommand,
        MoveToKafkaCommand,
        FxCommand,
        FxImportCommand,
        ReconcileCommand,
        EntitlementsCommand,
        ...ENTITLEMENT_SUBCOMMANDS,
      ],
    };
  }
}
