import { expect } from 'chai';
import fc from 'fast-check';
import { STALE_MS, judgeOwners, processAlive, processStart, type OwnerRow, type Self } from '../../src/responses/rollups/owners.ts';

const self: Self = { owner: '00000000-0000-4000-8000-000000000005', machine: 'host/boot/pid:[1]', pid: 500, pidStart: '77' };
const row = (owner: string, over: Partial<OwnerRow> = {}): OwnerRow => ({
  owner, machine: self.machine, pid: 100, pidStart: '1', started: '2026-01-01 00:00:00.000', ageMs: 1000, state: 'running', ...over,
});
const id = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;

describe('rollup mark owners: who is dead, who takes over (owners.ts)', () => {
  it('dead: stopped, or on this machine with its pid gone; never a process of another machine that only stopped refreshing', () => {
    const rows = [
      row(id(1), { state: 'stopped', machine: 'elsewhere' }),
      row(id(2), { pid: 2 }),
      row(id(3), { pid: 3, machine: 'elsewhere', ageMs: 10 * STALE_MS }),
      row(id(4), { pid: 4, state: 'taken_over' }),
      row(id(6), { pid: 6 }),
    ];
    const alive = (pid: number) => pid === 6;
    const { dead } = judgeOwners(rows, self, alive);
    expect(dead.map((r) => r.owner)).to.deep.equal([id(1), id(2)]);
  });

  it('the successor is the oldest live owner with a fresh row; this process counts even before its row is visible', () => {
    const alive = () => true;
    const older = row(id(1), { started: '2025-12-31 00:00:00.000', machine: 'elsewhere' });
    expect(judgeOwners([older], self, alive).successor).to.equal(id(1));
    expect(judgeOwners([{ ...older, ageMs: STALE_MS + 1 }], self, alive).successor, 'a stale row is no candidate').to.equal(self.owner);
    expect(judgeOwners([{ ...older, state: 'stopped' }], self, alive).successor, 'nor a stopped one').to.equal(self.owner);
    expect(judgeOwners([{ ...older, machine: self.machine }], self, () => false).successor, 'nor one whose pid is gone').to.equal(self.owner);
    expect(judgeOwners([], self, alive).successor).to.equal(self.owner);
  });

  it('every live process that sees the same rows names the same successor', () => {
    fc.assert(fc.property(fc.array(fc.record({ n: fc.integer({ min: 0, max: 9 }), started: fc.integer({ min: 0, max: 3 }), age: fc.integer({ min: 0, max: 2 * STALE_MS }) }), { minLength: 1, maxLength: 6 }), (specs) => {
      const rows = new Map(specs.map((s) => [id(s.n), row(id(s.n), { started: `2026-01-0${s.started + 1} 00:00:00.000`, ageMs: s.age, machine: 'elsewhere' })]));
      const live = [...rows.values()].filter((r) => r.ageMs <= STALE_MS);
      const names = live.map((r) => judgeOwners([...rows.values()], { ...self, owner: r.owner }, () => true).successor);
      return new Set(names).size <= 1;
    }));
  });

  it('processAlive: this process is alive, with its start time; a start time that differs is another process', () => {
    expect(processAlive(process.pid, processStart(process.pid))).to.equal(true);
    if (processStart(process.pid) !== '') expect(processAlive(process.pid, '1')).to.equal(false);
    expect(processAlive(2 ** 22 + 12345, '')).to.equal(false);
  });
});
