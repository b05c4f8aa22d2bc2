import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, Min, MinLength } from 'class-validator';
import { toBool, toInt, toList } from '../env-transforms.js';

/** The Kafka cluster and how this service consumes from it; KAFKA_BROKERS unset: the embedded event log instead. */
export class KafkaEnv {
  @IsOptional()
  @Transform(toList)
  @IsString({ each: true })
  KAFKA_BROKERS?: string[];

  /** Also the embedded log's topic name. */
  @IsString()
  @MinLength(1)
  KAFKA_TOPIC = 'purchase-events';

  @IsString()
  @MinLength(1)
  KAFKA_GROUP_ID = 'subscription-read-models';

  @IsString()
  @MinLength(1)
  KAFKA_CLIENT_ID = 'subscription-records';

  @Transform(toBool)
  @IsBoolean()
  KAFKA_SSL = false;

  @IsOptional()
  @IsIn(['plain', 'scram-sha-256', 'scram-sha-512'])
  KAFKA_SASL_MECHANISM?: 'plain' | 'scram-sha-256' | 'scram-sha-512';

  @IsOptional()
  @IsString()
  KAFKA_SASL_USERNAME?: string;

  @IsOptional()
  @IsString()
  KAFKA_SASL_PASSWORD?: string;

  @Transform(toInt)
  @IsInt()
  @Min(6000)
  @Max(300_000)
  KAFKA_SESSION_TIMEOUT_MS = 30_000;

  @Transform(toInt)
  @IsInt()
  @Min(1024)
  @Max(256 * 1024 * 1024)
  KAFKA_MAX_BYTES_PER_PARTITION = 4 * 1024 * 1024;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(64)
  KAFKA_PARTITIONS_CONCURRENCY = 2;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  KAFKA_ROUND_SHARE_MESSAGES = 150;
}
