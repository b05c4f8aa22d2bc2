import { DynamicModule, Module, type Provider } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { CONSUMER_STATUS } from '../health/consumer-status.js';
import { EventLogConsumer } from './embedded/event-log.consumer.js';
import { KafkaProjectionConsumer } from './kafka/kafka-projection.consumer.js';
import { TelemetryObserver } from './telemetry-observer.js';
import { PROJECTION_OBSERVER } from './projection-observer.js';
import { Projector } from './projector.js';

/** The live projection: from Kafka when KAFKA_BROKERS is set, else from the embedded event log. */
@Module({})
export class IngestionModule {
  static forRoot(config: AppConfig): DynamicModule {
    if (!config.consumerEnabled) return { module: IngestionModule, global: true, providers: [], exports: [] };
    const Consumer = config.kafka ? KafkaProjectionConsumer : EventLogConsumer;
    const providers: Provider[] = [
      Projector,
      { provide: PROJECTION_OBSERVER, useClass: TelemetryObserver },
      Consumer,
      { provide: CONSUMER_STATUS, useExisting: Consumer },
    ];
    return { module: IngestionModule, global: true, providers, exports: [CONSUMER_STATUS] };
  }
}
