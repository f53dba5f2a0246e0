import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/**
 * Summarises V8 .cpuprofile files (from `--cpu-prof`, e.g. BENCH_NODE_ARGS="--cpu-prof
 * --cpu-prof-dir=/tmp/prof"): for each profile, the top N functions by self time and the top N
 * files (a package under node_modules counts as one file, the app's own code per file).
 *
 *   npx node bench/.build/bench/tuning/profile.js /tmp/prof [more files or dirs]   PROFILE_TOP (20)
 *
 * With PROFILE_INCLUSIVE=<regex>, also the top functions by inclusive time (self plus callees,
 * each sample counted once per function) among those whose "name file" matches, e.g.
 * PROFILE_INCLUSIVE='apps/|libs/' for the app's own code. why: async code splits a request over
 * many stacks, so this shows synchronous spans only; it still finds what a step calls into.
 *
 * With PROFILE_FLAME=<dir>, also a flame graph of each profile's busy time, <dir>/<profile>.svg:
 * one box per call path, as wide as its inclusive time, callers below callees; hover for the
 * function, file, time and share. Colours: the app's own code, packages, Node's internals, native.
 *
 * Each profile is labelled by the app whose code it ran (api, worker, pool thread, other). Shares
 * are of the busy time: idle time (the event loop waiting) is reported apart.
 */
interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function profilesIn(paths: string[]): string[] {
  return paths.flatMap((p) =>
    statSync(p).isDirectory()
      ? readdirSync(p)
          .filter((f) => f.endsWith('.cpuprofile'))
          .sort()
          .map((f) => join(p, f))
      : [p],
  );
}

/** A file's short name: `pkg` for node_modules/pkg/…, the path from apps/ or libs/ for our own. */
function fileOf(url: string): string {
  if (!url) return '(native or V8)';
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return `[${pkg[1]}]`;
  const own = /\/((?:apps|libs|bench)\/.*)$/.exec(path);
  if (own) return own[1];
  return path.startsWith('node:') ? path : basename(path);
}

function labelOf(profile: CpuProfile): string {
  const urls = new Set(profile.nodes.map((n) => n.callFrame.url));
  const has = (re: RegExp) => [...urls].some((u) => re.test(u));
  if (has(/apps\/worker\/src\/pool\/thread\.js$/)) return 'pool thread';
  if (has(/apps\/worker\/src\/main\.js$/)) return 'worker';
  if (has(/apps\/api\/src\/main\.js$/)) return 'api';
  return 'other';
}

function table(title: string, rows: Array<[string, number]>, busy: number, top: number): string {
  const lines = rows
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => `  ${(us / 1000).toFixed(1).padStart(9)} ms ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${name}`);
  return [`${title}`, ...lines].join('\n');
}

function frameName(frame: CallFrame): string {
  return `${frame.functionName || '(anonymous)'}${frame.url ? ` ${fileOf(frame.url)}:${frame.lineNumber + 1}` : ''}`;
}

/** Inclusive time of each function matching `focus`: its own samples and its callees', once per stack. */
function inclusive(profile: CpuProfile, selfUs: Map<number, number>, focus: RegExp): Array<[string, number]> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  const walk = (id: number, onStack: Set<string>): number => {
    const node = byId.get(id)!;
    const name = frameName(node.callFrame);
    const counted = focus.test(name) && !onStack.has(name);
    if (counted) onStack.add(name);
    let us = selfUs.get(id) ?? 0;
    for (const child of node.children ?? []) us += walk(child, onStack);
    if (counted) {
      onStack.delete(name);
      totals.set(name, (totals.get(name) ?? 0) + us);
    }
    return us;
  };
  walk(profile.nodes[0].id, new Set());
  return [...totals];
}

/** Microseconds each node held the thread. why deltas, not hit counts: the sampling interval stretches under load; the delta to the next sample is the time the sampled frame actually held it. */
function selfTimes(profile: CpuProfile): Map<number, number> {
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0)));
  return selfUs;
}

const FLAME_WIDTH = 1200;
const FLAME_ROW = 16;
const escapeXml = (s: string) => s.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** Colour by where the code lives (as fileOf names it): ours red, packages orange, Node's internals green, native grey. */
function flameColour(frame: CallFrame): string {
  const file = fileOf(frame.url);
  if (!frame.url) return '#c8c8c8';
  if (file.startsWith('[')) return '#f0a848';
  return /^(apps|libs|bench)\//.test(file) ? '#e8643c' : '#78b864';
}

/** A self-contained SVG flame graph of the profile's busy time (V8's call tree; `(idle)` and `(program)` left out). */
function flameGraph(profile: CpuProfile, title: string): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = selfTimes(profile);
  const inclusiveUs = new Map<number, number>();
  const sum = (id: number): number => {
    const node = byId.get(id)!;
    if (['(idle)', '(program)'].includes(node.callFrame.functionName)) return 0;
    const us = (node.children ?? []).reduce((n, child) => n + sum(child), selfUs.get(id) ?? 0);
    inclusiveUs.set(id, us);
    return us;
  };
  const root = profile.nodes[0];
  const busy = sum(root.id);
  const boxes: Array<{ x: number; depth: number; width: number; us: number; name: string; fill: string }> = [];
  const place = (id: number, x: number, depth: number) => {
    const node = byId.get(id)!;
    const us = inclusiveUs.get(id) ?? 0;
    const width = (us / busy) * FLAME_WIDTH;
    if (width < 0.3) return;
    boxes.push({ x, depth, width, us, name: id === root.id ? 'all busy time' : frameName(node.callFrame), fill: flameColour(node.callFrame) });
    for (const child of node.children ?? []) {
      place(child, x, depth + 1);
      x += ((inclusiveUs.get(child) ?? 0) / busy) * FLAME_WIDTH;
    }
  };
  place(root.id, 0, 0);
  // The root at the bottom, callees above it.
  const height = (Math.max(...boxes.map((b) => b.depth)) + 1) * FLAME_ROW + 30;
  const svgBox = ({ x, depth, width, us, name, fill }: (typeof boxes)[number]) => {
    const y = height - (depth + 1) * FLAME_ROW;
    const label = width > 40 ? `<text x="${(x + 3).toFixed(2)}" y="${y + 11}">${escapeXml(name.slice(0, Math.floor(width / 6.5)))}</text>` : '';
    return (
      `<g><title>${escapeXml(name)}: ${(us / 1000).toFixed(1)} ms, ${((100 * us) / busy).toFixed(1)}%</title>` +
      `<rect x="${x.toFixed(2)}" y="${y}" width="${width.toFixed(2)}" height="${FLAME_ROW - 1}" fill="${fill}"/>${label}</g>`
    );
  };
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${FLAME_WIDTH}" height="${height}" font-family="monospace" font-size="11">`,
    `<text x="4" y="14" font-size="13">${escapeXml(title)}</text>`,
    ...boxes.map(svgBox),
    '</svg>',
  ].join('\n');
}

function summarise(file: string, top: number): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const selfUs = selfTimes(profile);
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let idle = 0;
  let total = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!;
    total += us;
    if (frame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    const fn = frameName(frame);
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    const f = frame.url ? fileOf(frame.url) : frame.functionName;
    byFile.set(f, (byFile.get(f) ?? 0) + us);
  }
  const busy = total - idle;
  const focus = process.env.PROFILE_INCLUSIVE;
  const flameDir = process.env.PROFILE_FLAME;
  if (flameDir) {
    mkdirSync(flameDir, { recursive: true });
    const title = `${basename(file)} (${labelOf(profile)}): own code red, packages orange, Node green, native grey`;
    writeFileSync(join(flameDir, `${basename(file, '.cpuprofile')}.svg`), flameGraph(profile, title));
  }
  return [
    `== ${basename(file)} (${labelOf(profile)}): ${(total / 1e6).toFixed(1)} s sampled, busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s`,
    table(`top ${top} functions by self time (% of busy)`, [...byFunction], busy, top),
    table(`top ${top} files or packages by self time (% of busy)`, [...byFile], busy, top),
    ...(focus ? [table(`top ${top} functions matching /${focus}/ by inclusive time (% of busy)`, inclusive(profile, selfUs, new RegExp(focus)), busy, top)] : []),
  ].join('\n');
}

function main(): void {
  const paths = process.argv.slice(2);
  if (paths.length === 0) throw new Error('usage: profile.js <.cpuprofile file or directory>…');
  const top = Number(process.env.PROFILE_TOP ?? 20);
  for (const file of profilesIn(paths)) console.log(`${summarise(file, top)}\n`);
}

main();
