export const CONSUMER_STATUS = Symbol('CONSUMER_STATUS');
export type ConsumerState = 'starting' | 'running' | 'retrying' | 'stopped';
export interface ConsumerStatus {
  state(): ConsumerState;
}
