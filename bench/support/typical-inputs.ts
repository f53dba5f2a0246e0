import { canonicalJson } from '../../libs/jobs/src/content-key';
import { type JobDefinition, SILENT_LOG } from '../../libs/jobs/src/define-job';

type Path = Array<string | number>;
type Leaf = { path: Path; value: string | number };

function leaves(value: unknown, path: Path = []): Leaf[] {
  if (typeof value === 'string' || typeof value === 'number') return [{ path, value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, [...path, i]));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
  return [];
}

function withLeaf(value: unknown, path: Path, leaf: unknown): unknown {
  if (path.length === 0) return leaf;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[path[0]] = withLeaf(copy[path[0]], path.slice(1), leaf);
  return copy;
}

/**
 * Up to `count` distinct inputs of `def` shaped like its first example (its typical input): the
 * example itself, then copies with one leaf changed. A string's last characters become a counter in
 * base 36 (same length); a number counts down, so no copy asks for more work than the example.
 * why distinct: equal inputs share one job (single flight) and one cache entry. A type with few
 * valid inputs (fibonacci: n ≤ 30 going down) gives fewer than `count`.
 */
export function typicalInputs(def: JobDefinition, count: number): unknown[] {
  const example = def.examples[0];
  if (example === undefined) throw new Error(`job type "${def.name}" declares no example`);
  const seen = new Set<string>();
  const inputs: unknown[] = [];
  const take = (candidate: unknown): boolean => {
    const parsed = def.input.safeParse(candidate);
    if (!parsed.success) return false;
    const json = canonicalJson(parsed.data);
    if (!seen.has(json)) {
      seen.add(json);
      inputs.push(candidate);
    }
    return true;
  };
  take(example);
  const width = Math.max(1, count.toString(36).length);
  const all = leaves(example);
  const ordered = [...all.filter((l) => typeof l.value === 'string'), ...all.filter((l) => typeof l.value === 'number')];
  for (const { path, value } of ordered) {
    for (let i = 1; inputs.length < count && i <= count; i++) {
      const changed =
        typeof value === 'number' ? value - i : value.length >= width ? value.slice(0, value.length - width) + i.toString(36).padStart(width, '0') : undefined;
      if (changed === undefined || !take(withLeaf(example, path, changed))) break;
    }
  }
  return inputs;
}

/** Jobs one submission of `input` becomes: itself, plus its chunks when the type fans out. */
export function jobsPerSubmission(def: JobDefinition, input: unknown): number {
  return 1 + (def.fanOut ? def.fanOut.split(def.input.parse(input)).length : 0);
}

/** ms one run of `input` takes on this thread (median of 3 after a warm-up), to size a type's share of a run. */
export async function runMs(def: JobDefinition, input: unknown): Promise<number> {
  const parsed = def.input.parse(input);
  const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };
  const times: number[] = [];
  for (let i = 0; i < 4; i++) {
    const t0 = performance.now();
    await def.run(parsed, ctx);
    times.push(performance.now() - t0);
  }
  return times.slice(1).sort((a, b) => a - b)[1];
}
