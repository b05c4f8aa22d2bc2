import { RoundSharing } from './round-sharing.js';

const messages = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ offset: String(from + i) }));

describe('RoundSharing', () => {
  it('applies backlog batches whole while no partition has live traffic', () => {
    const sharing = new RoundSharing(100);
    expect(sharing.take({ partition: 1, highWatermark: '10000' }, messages(0, 8000), 0)).toHaveLength(8000);
  });

  it('cuts backlog batches to the share once a partition is at its head twice in a row, for 3 s', () => {
    const sharing = new RoundSharing(100);
    expect(sharing.take({ partition: 0, highWatermark: '50' }, messages(40, 10), 0)).toHaveLength(10);
    expect(sharing.take({ partition: 0, highWatermark: '60' }, messages(50, 10), 1000)).toHaveLength(10);
    expect(sharing.take({ partition: 1, highWatermark: '10000' }, messages(0, 8000), 2000)).toHaveLength(100);
    expect(sharing.take({ partition: 1, highWatermark: '10000' }, messages(100, 8000), 3999)).toHaveLength(100);
    expect(sharing.take({ partition: 1, highWatermark: '10000' }, messages(200, 8000), 4000)).toHaveLength(8000);
  });

  it('does not take the batch that drains a backlog for live traffic', () => {
    const sharing = new RoundSharing(100);
    // partition 0 finishes its import: a backlog batch, then the last one, which ends at the head
    expect(sharing.take({ partition: 0, highWatermark: '9000' }, messages(0, 8000), 0)).toHaveLength(8000);
    expect(sharing.take({ partition: 0, highWatermark: '9000' }, messages(8000, 1000), 500)).toHaveLength(1000);
    // the others still importing are not throttled
    expect(sharing.take({ partition: 1, highWatermark: '20000' }, messages(0, 8000), 600)).toHaveLength(8000);
  });

  it('shares for the first second after an assignment, before live traffic can be told from none', () => {
    const sharing = new RoundSharing(100);
    sharing.assigned(0);
    expect(sharing.take({ partition: 1, highWatermark: '10000' }, messages(0, 8000), 10)).toHaveLength(100);
    expect(sharing.isLive(999)).toBe(true);
    expect(sharing.take({ partition: 1, highWatermark: '10000' }, messages(100, 8000), 1000)).toHaveLength(8000);
  });
});
