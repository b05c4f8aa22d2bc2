import { Injectable } from '@nestjs/common';

/** The newest event time this instance has projected (epoch ms), for the freshness gauge. */
@Injectable()
export class NewestEventClock {
  newest: number | undefined;

  observe(isoTime: string): void {
    const t = Date.parse(isoTime);
    if (!Number.isNaN(t) && (this.newest === undefined || t > this.newest)) this.newest = t;
  }
}
