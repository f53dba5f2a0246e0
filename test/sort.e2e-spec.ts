import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { resultOf, submit } from './support/http';

/** The sort example's own end-to-end test: `npm run remove:job -- sort` removes it with the type. */
describe('sort job', () => {
  let apps: AppProcess[] = [];
  // The large result goes to this blob store.
  const dir = mkdtempSync(join(tmpdir(), 'sort-'));

  beforeAll(async () => {
    const env = stackEnv('sort', { BLOB_STORE_URL: `file://${dir}` });
    apps = await startAll([startApp('api', env), startApp('worker', env)]);
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('sorts a large list within the default BODY_LIMIT; the result, over 64 KiB, comes from the blob store', async () => {
    const numbers = Array.from({ length: 100_000 }, (_, i) => ((i * 7919) % 100_003) - 50_000.5);
    const res = await submit(apps[0].url, 'sort', { numbers, order: 'desc' }, { wait: 20 });
    expect([res.status, res.body.result, res.body.files?.map((f: { name: string }) => f.name)]).toEqual([200, undefined, ['result.json']]);
    expect((await resultOf(apps[0].url, res.body)).sorted).toEqual([...numbers].sort((a, b) => b - a));
  });
});
