import pino from 'pino';
import { createLogger, REDACTED_PATHS } from '../../libs/logging/src/logger';

/**
 * What LOG_FORMAT costs JSON logging: the logger as it was before (pino with our redaction, built
 * inline here) against createLogger in production, per construction and per log call; and, for
 * scale, the pretty lines a terminal gets. Lines go to stdout, so send it away; results go to stderr:
 *   npx tsc -p bench/tsconfig.json && npx node bench/.build/bench/tuning/logger.micro.js > /dev/null
 */
function nsPerCall(fn: () => void, calls: number): number {
  for (let i = 0; i < calls / 10; i++) fn();
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) fn();
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / calls;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const before = () => pino({ name: 'api', level: 'info', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } });
const after = () => createLogger({ logLevel: 'info', logFormat: 'auto', env: 'production' }, 'api');
const pretty = createLogger({ logLevel: 'info', logFormat: 'pretty', env: 'development' }, 'api');
const [old, current] = [before(), after()];
const line = { jobId: '6f1c2b9e', type: 'fibonacci', queue: 'default', ms: 12 };

const rows: Array<[string, () => void, number]> = [
  ['construct, before', before, 20_000],
  ['construct, after (production)', after, 20_000],
  ['info line, before', () => old.info(line, 'job completed'), 300_000],
  ['info line, after (production)', () => current.info(line, 'job completed'), 300_000],
  ['debug line below the level, before', () => old.debug(line, 'job started'), 3_000_000],
  ['debug line below the level, after', () => current.debug(line, 'job started'), 3_000_000],
  ['info line, pretty (a terminal)', () => pretty.info(line, 'job completed'), 30_000],
];
// why rounds, interleaved: a drift of the machine's speed then hits every row alike; the median drops outliers.
const samples = rows.map((): number[] => []);
for (let round = 0; round < 5; round++) rows.forEach(([, fn, calls], i) => samples[i].push(nsPerCall(fn, calls)));
for (const [i, [name]] of rows.entries()) process.stderr.write(`${name.padEnd(40)} ${median(samples[i]).toFixed(0).padStart(7)} ns\n`);
