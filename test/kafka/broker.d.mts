export type KafkaBroker = {
  brokers: string;
  dir: string;
  readonly pid: number | undefined;
  stop(): Promise<void>;
  restart(): Promise<void>;
  restartEmpty(): Promise<void>;
  destroy(): Promise<void>;
};
export function kafkaClasspath(): string;
export function freePort(): Promise<number>;
export function freePorts(count: number): Promise<number[]>;
export function startKafkaBroker(options?: { dir?: string; port?: number; controllerPort?: number; fresh?: boolean }): Promise<KafkaBroker>;
