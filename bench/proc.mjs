// What the benchmarks read from /proc: CPU time and memory of processes they started or watch.
import { readdirSync, readFileSync } from 'node:fs';

/** sysconf(_SC_CLK_TCK): /proc counts CPU time in these ticks, 100 on every Linux this runs on (USER_HZ). */
const CLOCK_TICKS = 100;

/** CPU time (user + system, /proc/<pid>/stat fields 14 and 15) of a process, in seconds; undefined once it is gone. */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command (field 2) may hold spaces and parentheses: fields are counted from its last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Every process whose command is PostgreSQL's server (the postmasters and their backends). */
export function postgresPids() {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
}

/**
 * CPU seconds of PostgreSQL's processes from this call until the returned function is called,
 * including processes that came and went in between (sampled every 200 ms).
 */
export function postgresCpu() {
  const start = new Map();
  const last = new Map();
  const sample = () => {
    for (const pid of postgresPids()) {
      const s = cpuSeconds(pid);
      if (s !== undefined) last.set(pid, s);
    }
  };
  sample();
  for (const [pid, s] of last) start.set(pid, s);
  const timer = setInterval(sample, 200);
  return () => {
    clearInterval(timer);
    sample();
    let total = 0;
    for (const [pid, s] of last) total += s - (start.get(pid) ?? 0);
    return total;
  };
}
