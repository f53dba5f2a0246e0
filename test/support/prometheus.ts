/** One sample of a Prometheus text exposition: `name{label="value",…} 1.5`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses a /metrics body; a line that is neither a comment nor a sample fails loudly. */
export function parseExposition(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = SAMPLE.exec(line);
      if (!match) throw new Error(`not a Prometheus sample: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(LABEL)].map(([, k, v]) => [k, v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))]));
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

/** GET `url`/metrics, parsed. */
export async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`);
  if (!res.ok) throw new Error(`${url}/metrics: HTTP ${res.status}`);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

/** Samples of `name` whose labels include `labels`. */
export function series(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The sum of the values of `name` over the series matching `labels`. */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return series(samples, name, labels).reduce((sum, s) => sum + s.value, 0);
}

/** Whether `samples` hold family `name`: its own samples, or a histogram's `_bucket`/`_count`/`_sum`. */
export function hasFamily(samples: Sample[], name: string): boolean {
  return samples.some((s) => s.name === name || s.name === `${name}_bucket` || s.name === `${name}_count` || s.name === `${name}_sum`);
}
