import { Counter, Histogram, Registry } from 'prom-client';
import { BoundCounter, BoundHistogram } from './bound-metrics';

/** The bound metrics must expose exactly what prom-client's own classes expose for the same updates. */
describe('bound metrics', () => {
  const buckets = [0.001, 0.01, 0.1, 1];
  const observations: Array<[string, number]> = [['200', 0.0005], ['200', 0.001], ['200', 0.05], ['500', 3], ['200', 7]];

  it('a histogram scrapes like prom-client’s', async () => {
    const [mine, theirs] = [new Registry(), new Registry()];
    const bound = new BoundHistogram({ name: 'h_seconds', help: 'h', labelNames: ['route', 'status'], buckets, registers: [mine] });
    const reference = new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['route', 'status'], buckets, registers: [theirs] });
    const series = new Map(['200', '500'].map((status) => [status, bound.bind({ route: '/x/:id', status })]));
    for (const [status, value] of observations) {
      series.get(status)!.observe(value);
      reference.observe({ route: '/x/:id', status }, value);
    }
    expect(await mine.metrics()).toBe(await theirs.metrics());
    expect(await mine.metrics()).toContain('h_seconds_bucket{le="+Inf",route="/x/:id",status="200"} 4');
  });

  it('a counter scrapes like prom-client’s, bound series from 0', async () => {
    const [mine, theirs] = [new Registry(), new Registry()];
    const bound = new BoundCounter({ name: 'c_total', help: 'c', labelNames: ['type'], registers: [mine] });
    const reference = new Counter({ name: 'c_total', help: 'c', labelNames: ['type'], registers: [theirs] });
    const [a, b] = [bound.bind({ type: 'a' }), bound.bind({ type: 'b' })];
    reference.inc({ type: 'a' }, 0);
    reference.inc({ type: 'b' }, 0);
    expect(await mine.metrics()).toBe(await theirs.metrics());
    a.inc();
    a.inc(2);
    b.inc();
    reference.inc({ type: 'a' }, 3);
    reference.inc({ type: 'b' });
    expect(await mine.metrics()).toBe(await theirs.metrics());
    // Scraping twice does not count twice.
    expect(await mine.metrics()).toBe(await theirs.metrics());
  });
});
