import { SingleBar } from 'cli-progress';

export type ProgressState = {
  phase: 'replaying' | 'catching up' | 'switching' | 'verifying';
  done: bigint;
  total: bigint;
  positions: Map<number, bigint>;
};

/** Events per second over a sliding window of samples. */
class Rate {
  private samples: { at: number; done: bigint }[] = [];
  update(done: bigint): number {
    const now = Date.now();
    this.samples.push({ at: now, done });
    while (this.samples.length > 2 && now - this.samples[0].at > 10_000) this.samples.shift();
    const first = this.samples[0];
    const seconds = (now - first.at) / 1000;
    return seconds > 0 ? Number(done - first.done) / seconds : 0;
  }
}

export interface ProgressReporter {
  update(state: ProgressState): void;
  stop(): void;
}

const positionsText = (p: Map<number, bigint>) => [...p].sort(([a], [b]) => a - b).map(([k, v]) => `p${k}@${v}`).join(' ');

/** A bar with events/s, partition positions and ETA on a terminal; a plain line every 5 s otherwise. */
export function createProgressReporter(tty = process.stderr.isTTY): ProgressReporter {
  const rate = new Rate();
  if (tty) {
    const bar = new SingleBar({
      format: '{phase} [{bar}] {percentage}% | {value}/{total} events | {rate} ev/s | ETA {eta_formatted} | {positions}',
      stream: process.stderr,
      etaBuffer: 50,
      hideCursor: true,
    });
    let started = false;
    return {
      update(s) {
        const payload = { phase: s.phase.padEnd(11), rate: Math.round(rate.update(s.done)), positions: positionsText(s.positions) };
        if (!started) {
          bar.start(Number(s.total), Number(s.done), payload);
          started = true;
        }
        bar.setTotal(Number(s.total));
        bar.update(Number(s.done), payload);
      },
      stop: () => bar.stop(),
    };
  }
  let last = 0;
  return {
    update(s) {
      const r = rate.update(s.done);
      if (Date.now() - last < 5_000) return;
      last = Date.now();
      const remaining = Number(s.total - s.done);
      const eta = r > 0 ? `${Math.round(remaining / r)} s` : 'unknown';
      process.stderr.write(
        `${new Date().toISOString()} rebuild ${s.phase}: ${s.done}/${s.total} events, ${Math.round(r)} events/s, ETA ${eta}, positions ${positionsText(s.positions) || '-'}\n`,
      );
    },
    stop: () => undefined,
  };
}
