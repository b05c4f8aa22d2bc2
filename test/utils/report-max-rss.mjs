// Preloaded into a child process (`node --import <this file> ...`): on exit, writes the process's
// peak resident set size to stderr as `max-rss-kb <n>`, for tests that bound a command's memory.
import { writeSync } from 'node:fs';

process.on('exit', () => writeSync(2, `max-rss-kb ${process.resourceUsage().maxRSS}\n`));
