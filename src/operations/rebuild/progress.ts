import { createProgress, type Progress } from '../../common/progress.js';

export type ProgressState = {
  phase: 'staging' | 'folding' | 'replaying' | 'catching up' | 'switching' | 'verifying';
  done: bigint;
  total: bigint;
  positions: Map<number, bigint>;
};

export interface ProgressReporter {
  update(state: ProgressState): void;
  stop(): void;
}

const positionsText = (p: Map<number, bigint>) =>
  [...p]
    .sort(([a], [b]) => a - b)
    .map(([k, v]) => `p${k}@${v}`)
    .join(' ');

/** Events, rate, ETA and partition positions: a bar on a terminal, a plain line every 5 s otherwise. */
export function createProgressReporter(tty = process.stderr.isTTY): ProgressReporter {
  let progress: Progress | undefined;
  let phase: ProgressState['phase'] | undefined;
  return {
    update(s) {
      // A new phase has its own total and rate: start its own progress.
      if (s.phase !== phase) {
        progress?.stop();
        progress = createProgress({ label: `rebuild ${s.phase}`, unit: 'events', tty });
        phase = s.phase;
      }
      progress!.update({
        done: Number(s.done),
        fraction: s.total > 0n ? Number(s.done) / Number(s.total) : undefined,
        detail: `of ${s.total}, ${positionsText(s.positions) || '-'}`,
      });
    },
    stop: () => progress?.stop(),
  };
}
