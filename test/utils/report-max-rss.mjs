// Preloaded into a child process (`node --import <this file> ...`): on exit, writes the process's
// peak resident set size to stderr as `max-rss-kb <n>`, for tests that bound a command's memory.
// VmHWM of /proc/self/status, not getrusage's maxRSS: Linux keeps ru_maxrss across execve, so a
// child spawned by a large process (a Jest worker late in a run, 250 MB) reported its parent's peak.
import { readFileSync, writeSync } from 'node:fs';

process.on('exit', () => {
  const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  writeSync(2, `max-rss-kb ${hwm ? hwm[1] : process.resourceUsage().maxRSS}\n`);
});
