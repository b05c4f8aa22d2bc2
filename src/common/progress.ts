import { SingleBar } from 'cli-progress';

/**
 * Items per second over the last ten seconds of samples; undefined until the samples span a second
 * (a rate over a few milliseconds says 0 or millions). Samples closer than 100 ms are folded, so a
 * caller updating per item keeps a short list.
 */
export class SlidingRate {
  private samples: { at: number; done: number }[] = [];
  update(done: number, now = Date.now()): number | undefined {
    const last = this.samples.at(-1);
    if (last && now - last.at < 100 && this.samples.length > 1) last.done = done;
    else this.samples.push({ at: now, done });
    while (this.samples.length > 2 && now - this.samples[1].at >= 10_000) this.samples.shift();
    const first = this.samples[0];
    const seconds = (now - first.at) / 1000;
    return seconds >= 1 ? (done - first.done) / seconds : undefined;
  }
}

/** A whole number of items per second; "-" until there is one to go by. */
export function formatRate(perSecond: number | undefined): string {
  return perSecond === undefined || !Number.isFinite(perSecond) ? '-' : String(Math.round(perSecond));
}

/** "42 s", "3 min 5 s", "1 h 2 min"; "-" while there is no rate to go by. */
export function formatEta(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return '-';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export type ProgressUpdate = {
  /** Items done so far (events). */
  done: number;
  /** Share of the work done (0..1), when known; it drives the bar and the ETA. */
  fraction?: number;
  /** Anything else worth showing (refused lines, partition positions). */
  detail?: string;
};

export type Progress = {
  update(u: ProgressUpdate): void;
  /** Takes the bar off the terminal so that a message line can be written; the next update shows it again. Plain lines go on. */
  clear(): void;
  /** The end: the bar is taken off and plain lines stop (an update starts them again). */
  stop(): void;
};

/**
 * Count, rate and ETA: a bar on a terminal, a plain line every `everyMs` otherwise (pipes, files,
 * CI logs), so progress is readable wherever stderr goes. The plain lines are timed, not driven by
 * updates: while the work waits (the first page of a store's listing, slow answers) a line every
 * `everyMs` still says it is alive, with the last count and a falling rate. `everyMs: 0` writes a
 * line on every update instead.
 */
export function createProgress(o: {
  label: string;
  unit: string;
  tty?: boolean;
  everyMs?: number;
  write?: (line: string) => void;
  stream?: NodeJS.WritableStream;
}): Progress {
  const tty = o.tty ?? process.stderr.isTTY === true;
  const write = o.write ?? ((line: string) => process.stderr.write(line));
  const rate = new SlidingRate();
  const started = Date.now();
  const eta = (u: ProgressUpdate) => {
    if (u.fraction === undefined || u.fraction <= 0) return undefined;
    if (u.fraction >= 1) return 0;
    return ((Date.now() - started) / 1000) * ((1 - u.fraction) / u.fraction);
  };
  if (tty) {
    // Our own names only: cli-progress fills {eta} and {value} itself from the bar's 0..1000 steps
    // (ETA NULL/INF while the steps stand still), over whatever the payload says.
    const bar = new SingleBar({
      format: `${o.label} [{bar}] {pct} | {count} ${o.unit} | {speed} ${o.unit}/s | ETA {remaining} | {detail}`,
      stream: o.stream ?? process.stderr,
      hideCursor: true,
    });
    let running = false;
    const stop = () => {
      if (running) bar.stop();
      running = false;
    };
    return {
      update(u) {
        const payload = {
          pct: u.fraction === undefined ? '-' : `${Math.floor(u.fraction * 100)}%`,
          count: u.done,
          speed: formatRate(rate.update(u.done)),
          remaining: formatEta(eta(u)),
          detail: u.detail ?? '',
        };
        if (!running) bar.start(1000, 0, payload);
        running = true;
        bar.update(Math.round((u.fraction ?? 0) * 1000), payload);
      },
      clear: stop,
      stop,
    };
  }
  const everyMs = o.everyMs ?? 5_000;
  let latest: ProgressUpdate = { done: 0 };
  let timer: NodeJS.Timeout | undefined;
  const line = () => {
    const u = latest;
    const pct = u.fraction === undefined ? '' : `, ${Math.floor(u.fraction * 100)}%`;
    write(
      `${new Date().toISOString()} ${o.label}: ${u.done} ${o.unit}${pct}, ${formatRate(rate.update(u.done))} ${o.unit}/s, ETA ${formatEta(eta(u))}${u.detail ? `, ${u.detail}` : ''}\n`,
    );
  };
  // Unref'd: a line is no reason to keep the process alive.
  const tick = () => {
    timer = setTimeout(() => {
      line();
      tick();
    }, everyMs).unref();
  };
  if (everyMs > 0) tick();
  return {
    update(u) {
      latest = u;
      if (everyMs <= 0) line();
      else {
        rate.update(u.done);
        if (timer === undefined) tick();
      }
    },
    clear: () => undefined,
    stop: () => {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
