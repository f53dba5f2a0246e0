import { num } from './format';
import type { RunMeta } from './markdown';
import type { ChartPanel, ScenarioReport } from './report.types';

const WIDTH = 980;
const PANEL = 470;
const GAP = 40;
const LABEL = 130;
const BAR_AREA = 250;
const BAR_H = 16;
const BAR_GAP = 6;
const TEMPLATE = '#2b6cb0';
const BASELINE = '#a0aec0';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function panel(p: ChartPanel, x: number, y: number): string {
  const max = Math.max(...p.bars.map((b) => (Number.isFinite(b.value) ? b.value : 0)), 1e-9);
  const out = [`<text x="${x}" y="${y + 12}" class="t">${esc(p.title)}</text>`];
  p.bars.forEach((bar, i) => {
    const by = y + 22 + i * (BAR_H + BAR_GAP);
    const value = Number.isFinite(bar.value) ? bar.value : 0;
    const w = Math.max(1, (value / max) * BAR_AREA);
    out.push(
      `<text x="${x + LABEL - 6}" y="${by + BAR_H - 4}" class="l">${esc(bar.label)}</text>`,
      `<rect x="${x + LABEL}" y="${by}" width="${w.toFixed(1)}" height="${BAR_H}" rx="2" fill="${bar.template ? TEMPLATE : BASELINE}"/>`,
      `<text x="${x + LABEL + w + 5}" y="${by + BAR_H - 4}" class="v">${esc(Number.isFinite(bar.value) ? `${num(bar.value)} ${p.unit}` : 'n/a')}</text>`,
    );
  });
  return out.join('\n');
}

const panelHeight = (p?: ChartPanel) => (p ? 22 + p.bars.length * (BAR_H + BAR_GAP) + 10 : 0);

/**
 * The chart of a run, as a standalone SVG (no charting library): per scenario, throughput on the
 * left (higher is better) and p99 latency on the right (lower is better), template bars in blue.
 */
export function toSvg(meta: RunMeta, reports: ScenarioReport[]): string {
  const rows = reports.filter((r) => r.chart.throughput || r.chart.latency);
  const parts: string[] = [];
  let y = 56;
  for (const r of rows) {
    const h = Math.max(panelHeight(r.chart.throughput), panelHeight(r.chart.latency));
    if (r.chart.throughput) parts.push(panel(r.chart.throughput, 10, y));
    if (r.chart.latency) parts.push(panel(r.chart.latency, 10 + PANEL + GAP, y));
    parts.push(`<line x1="10" x2="${WIDTH - 10}" y1="${y + h + 4}" y2="${y + h + 4}" stroke="#e2e8f0"/>`);
    y += h + 12;
  }
  const height = y + 30;
  const footer = `${meta.mode === 'smoke' ? 'SMOKE RUN (tiny loads, numbers mean nothing) · ' : ''}${meta.date} · Node ${meta.node} · ${meta.cpus} CPUs · pool ${meta.threads} threads · median of ${meta.passes * meta.roundsPerPass} rounds`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif">
<style>.t{font-size:13px;font-weight:600;fill:#1a202c}.l{font-size:11px;fill:#4a5568;text-anchor:end}.v{font-size:11px;fill:#1a202c}.h{font-size:16px;font-weight:700;fill:#1a202c}.s{font-size:11px;fill:#718096}</style>
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="10" y="24" class="h">nest-offload bench: template vs baselines</text>
<text x="10" y="42" class="s"><tspan fill="${TEMPLATE}">■</tspan> template  <tspan fill="${BASELINE}">■</tspan> baseline · left: throughput (higher is better) · right: p99 latency (lower is better)</text>
${parts.join('\n')}
<text x="10" y="${height - 10}" class="s">${esc(footer)}</text>
</svg>
`;
}
