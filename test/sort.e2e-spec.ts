import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { submit } from './support/http';

/** The sort example's own end-to-end test: `npm run remove:job -- sort` removes it with the type. */
describe('sort job', () => {
  let apps: AppProcess[] = [];

  beforeAll(async () => {
    const env = stackEnv('sort');
    apps = await startAll([startApp('api', env), startApp('worker', env)]);
  });
  afterAll(() => Promise.all(apps.map((app) => app.stop())));

  it('sorts a large list, within the default BODY_LIMIT both ways', async () => {
    const numbers = Array.from({ length: 100_000 }, (_, i) => ((i * 7919) % 100_003) - 50_000.5);
    const res = await submit(apps[0].url, 'sort', { numbers, order: 'desc' }, { wait: 20 });
    expect(res.status).toBe(200);
    expect(res.body.result.sorted).toEqual([...numbers].sort((a, b) => b - a));
  });
});
