import { writeHeavySettings } from './embedded-postgres.js';

const GB = 1024 ** 3;

describe('writeHeavySettings', () => {
  it('gives shared buffers an eighth of the memory, never under PostgreSQL’s default nor over 4 GB', () => {
    expect(writeHeavySettings(24 * GB)).toContain('shared_buffers=3072MB');
    expect(writeHeavySettings(0.5 * GB)).toContain('shared_buffers=128MB');
    expect(writeHeavySettings(256 * GB)).toContain('shared_buffers=4096MB');
  });

  it('spaces checkpoints by WAL volume and time', () => {
    expect(writeHeavySettings(8 * GB)).toEqual(['shared_buffers=1024MB', 'max_wal_size=4GB', 'checkpoint_timeout=15min']);
  });
});
