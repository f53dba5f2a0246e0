import { ratio } from './format';
import type { ScenarioReport } from './report.types';

export interface RunMeta {
  date: string;
  mode: 'full' | 'smoke';
  passes: number;
  roundsPerPass: number;
  node: string;
  cpus: number;
  cpuModel: string;
  threads: number;
  durationS: number;
  commit: string;
  redis: string;
  appEnv: Record<string, string>;
}

const escape = (s: string) => s.replace(/\|/g, '\\|');

/** The results as markdown: one table of every measure against its target, then the details. */
export function toMarkdown(meta: RunMeta, reports: ScenarioReport[]): string {
  const head = [
    `Results of \`npm run bench\`${meta.mode === 'smoke' ? ' **in smoke mode (tiny loads: the numbers mean nothing)**' : ''}: ${meta.date}, commit ${meta.commit}, ` +
      `Node ${meta.node}, ${meta.cpus} CPUs (${meta.cpuModel}), worker pool ${meta.threads} threads, ${meta.redis}; ` +
      `${meta.passes} passes × ${meta.roundsPerPass} rounds, ${Math.round(meta.durationS)} s.` +
      (Object.keys(meta.appEnv).length > 0 ? ` App env overrides: \`${Object.entries(meta.appEnv).map(([k, v]) => `${k}=${v}`).join(' ')}\`.` : ''),
    'Ratios are measured side by side in the same run: median of the alternating rounds (min–max).',
    '',
    '| Scenario | Measure | Template | Baseline | Ratio | Target | Met |',
    '|---|---|---|---|---|---|---|',
  ];
  const rows = reports.flatMap((r) =>
    r.rows.map((row) =>
      [row.scenario, row.measure, row.template, row.baseline, row.ratio ? ratio(row.ratio) : '', row.target ?? '', row.met === undefined ? '' : row.met ? '✅' : '❌']
        .map((cell) => escape(cell))
        .join(' | '),
    ),
  );
  const sections = reports.flatMap((r) => r.sections);
  return [...head, ...rows.map((r) => `| ${r} |`), '', ...sections.flatMap((s) => [s, '']), ''].join('\n');
}
