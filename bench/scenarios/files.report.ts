import { mb, ms, num, perS, ratio, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import type { BenchOptions } from '../support/options';
import type { Rounds } from '../support/stats';

const SCENARIO = '12. Files';
const bytes = (n: number) => `${num(n)} B`;
const size = (n: number) => (n >= 1024 ** 2 ? `${num(n / 1024 ** 2)} MB` : `${num(n / 1024)} KB`);
/** The issue's targets (#28). */
const TARGET = { perJobBytes: 4096, sizeSpread: 1024, uploadRatio: 0.8, rssGrowth: 64 * 1024 ** 2, thumbsRatio: 1.5, isolation: 0.8 };

/** The files scenario's rows, chart and notes from what it measured (see files.ts). */
export function filesReport(
  rounds: Rounds,
  opts: BenchOptions,
  facts: Record<string, number>,
  type: string,
  census: Partial<Record<'small' | 'large', Record<string, number>>> = {},
): ScenarioReport {
  const r = (name: string) => rounds.get(name);
  const o = opts.files;
  const small = size(facts.smallBytes ?? o.smallBytes);
  const large = size(facts.largeBytes ?? o.largeBytes);
  const perJob = (which: 'small' | 'large', image: string) => {
    const template = r(`redisBytes.${which}.template`);
    const keys = r(`redisKeyBytes.${which}.template`);
    return {
      scenario: SCENARIO,
      measure: `Redis bytes per finished \`${type}\` job (input + result, kept, and its cached result), ${image} image ÷ the base64 peer's: used_memory less other processes' keys (used_memory alone); its keys by MEMORY USAGE`,
      template: `${spreadOf(template, bytes)} (${spreadOf(r(`redisBytesRaw.${which}.template`), bytes)}); keys ${spreadOf(keys, bytes)}`,
      baseline: `peer (image base64 in job data) ${spreadOf(r(`redisBytes.${which}.peer`), bytes)}`,
      ratio: r(`redisBytes.${which}.ratio`),
      target: `≤ ${num(TARGET.perJobBytes)} B`,
      met: [template, keys].every((m) => m.values.length > 0 && m.max <= TARGET.perJobBytes),
    };
  };
  const spreadLarge = r('redisBytes.largeLessSmall');
  const spreadLargeKeys = r('redisKeyBytes.largeLessSmall');
  // The keys a job of each size left, by family, largest first: where its bytes are.
  const families = (which: 'small' | 'large') =>
    Object.entries(census[which] ?? {})
      .filter(([, n]) => Math.abs(n) >= 1)
      .map(([family, n]) => `\`${family}\` ${num(n)}`)
      .join(', ');
  const rss = r('rssGrowth');
  return {
    key: 'files',
    title: 'Files',
    rows: [
      perJob('small', small),
      perJob('large', large),
      {
        scenario: SCENARIO,
        measure: `same, ${large} image − ${small} image (template): used_memory less other processes' keys (used_memory alone); its keys`,
        template: `${spreadOf(spreadLarge, bytes)} (${spreadOf(r('redisBytesRaw.largeLessSmall'), bytes)}); keys ${spreadOf(spreadLargeKeys, bytes)}`,
        baseline: '',
        target: `within ${num(TARGET.sizeSpread)} B`,
        met: [spreadLarge, spreadLargeKeys].every((m) => m.values.length > 0 && m.values.every((v) => Math.abs(v) <= TARGET.sizeSpread)),
      },
      {
        scenario: SCENARIO,
        measure: `same, ${large} image, on a Redis with its default hash encoding (hash-max-listpack-value 64, not the queue Redis's 1024): used_memory; its keys`,
        template: `${spreadOf(r('redisBytes.largeRedisDefaults.template'), bytes)}; keys ${spreadOf(r('redisKeyBytes.largeRedisDefaults.template'), bytes)}`,
        baseline: '',
      },
      {
        scenario: SCENARIO,
        measure: `upload MB/s, ${o.uploads} concurrent ${size(o.uploadBytes)} files into the file store: the API (multipart, hashed, sniffed) ÷ a bare Fastify route streaming the body into the same store`,
        template: `${spreadOf(r('uploadMBps.template'), (n) => perS(n, 'MB/s'))}; API ${ms(r('uploadCpuMsPerMB.template').median)} CPU per MB`,
        baseline: `${spreadOf(r('uploadMBps.bare'), (n) => perS(n, 'MB/s'))}; ${ms(r('uploadCpuMsPerMB.bare').median)} CPU per MB`,
        ratio: r('uploadRatio'),
        target: `≥ ${TARGET.uploadRatio}`,
        met: r('uploadRatio').median >= TARGET.uploadRatio,
      },
      {
        scenario: SCENARIO,
        measure: `API RSS growth while ${o.rssUploads} uploads of ${size(o.rssUploadBytes)} run at once (peak − before)`,
        template: `${spreadOf(rss, mb)} (before ${mb(r('rssBefore').median)}, ${perS(r('rssUploadMBps').median, 'MB/s')})`,
        baseline: '',
        target: `< ${mb(TARGET.rssGrowth)}`,
        met: rss.values.length > 0 && rss.max < TARGET.rssGrowth,
      },
      {
        scenario: SCENARIO,
        measure: `thumbnails/s of ${large} images (${opts.files.thumbCallers} callers, each getting its thumbnail) ÷ the base64 peer (its Nest worker decodes and runs sharp)`,
        template: spreadOf(r('thumbsPerS.template'), (n) => perS(n, 'thumbs/s')),
        baseline: spreadOf(r('thumbsPerS.peer'), (n) => perS(n, 'thumbs/s')),
        ratio: r('thumbsRatio'),
        target: `≥ ${TARGET.thumbsRatio}`,
        met: r('thumbsRatio').median >= TARGET.thumbsRatio,
      },
      {
        scenario: SCENARIO,
        measure: `API isolation: GET /v1/jobs/{id} req/s with ${o.feeders} callers of ${large} thumbnails ÷ idle`,
        template: `${perS(r('getBusy').median)} / ${perS(r('getIdle').median)} (p99 loaded ${ms(r('getBusyP99').median)})`,
        baseline: '',
        ratio: r('isolation'),
        target: `≥ ${TARGET.isolation}`,
        met: r('isolation').median >= TARGET.isolation,
      },
    ],
    chart: {
      throughput: {
        title: `12. Files: ${large} thumbnails/s`,
        unit: 'thumbs/s',
        bars: [
          { label: 'template', value: r('thumbsPerS.template').median, template: true },
          { label: 'base64 peer', value: r('thumbsPerS.peer').median, template: false },
        ],
      },
    },
    sections: [
      `Files: images ${small} and ${large} (JPEG, made distinct per job by a comment segment: no cache hit, same pixels); ` +
        `thumbnails ${o.thumbs} per leg, ${o.thumbCallers} callers, ratio ${ratio(r('thumbsRatio'))}; ` +
        `Redis bytes per job over ${o.memoryJobs} jobs (the peer's ${large} over ${o.peerLargeJobs}); ` +
        `uploads ${ratio(r('uploadRatio'))} of the bare route; isolation ${ratio(r('isolation'))} with ${num(r('fedThumbs').median)} thumbnails fed a round.`,
      `Files: Redis bytes per job by key family (MEMORY USAGE census of the last round, events stream left out): ${small} image: ${families('small')}; ${large} image: ${families('large')}.`,
    ],
    data: { ...rounds.all(), census },
  };
}
