import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupCpuLimit } from './cpu-budget';

describe('cgroupCpuLimit', () => {
  const made: string[] = [];
  const root = () => {
    const dir = mkdtempSync(join(tmpdir(), 'cgroup-'));
    made.push(dir);
    return dir;
  };
  afterAll(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('reads a cgroup v2 quota', () => {
    const dir = root();
    writeFileSync(join(dir, 'cpu.max'), '250000 100000\n');
    expect(cgroupCpuLimit(dir)).toBe(2.5);
  });

  it('reads no limit from "max"', () => {
    const dir = root();
    writeFileSync(join(dir, 'cpu.max'), 'max 100000\n');
    expect(cgroupCpuLimit(dir)).toBeUndefined();
  });

  it('reads a cgroup v1 quota', () => {
    const dir = root();
    mkdirSync(join(dir, 'cpu'));
    writeFileSync(join(dir, 'cpu', 'cpu.cfs_quota_us'), '200000');
    writeFileSync(join(dir, 'cpu', 'cpu.cfs_period_us'), '100000');
    expect(cgroupCpuLimit(dir)).toBe(2);
  });

  it('reads nothing where there is no cgroup', () => {
    expect(cgroupCpuLimit(root())).toBeUndefined();
  });
});
