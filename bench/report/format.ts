import type { Spread } from '../support/stats';

/** Numbers as the tables show them: 3 significant digits, no trailing noise. */
export function num(n: number): string {
  if (!Number.isFinite(n)) return 'n/a';
  const abs = Math.abs(n);
  if (abs >= 1000) return Math.round(n).toLocaleString('en-US');
  if (abs >= 100) return n.toFixed(0);
  if (abs >= 10) return n.toFixed(1);
  if (abs === 0) return '0';
  // why: 3 significant digits, so a ratio of 0.797 does not print as a target-meeting 0.80.
  return String(Number(n.toPrecision(3)));
}

export const ms = (n: number) => `${num(n)} ms`;
export const perS = (n: number, unit = 'req/s') => `${num(n)} ${unit}`;
export const mb = (bytes: number) => `${num(bytes / 1024 / 1024)} MB`;

/** "0.93 (0.90–0.95)": the median of the rounds, then min–max. */
export function ratio(s: Spread): string {
  if (!Number.isFinite(s.median)) return 'n/a';
  return s.values.length > 1 ? `${num(s.median)} (${num(s.min)}–${num(s.max)})` : num(s.median);
}

/** A Spread of a measured value shown with its unit: "4.1 ms (3.9–4.6)". */
export function spreadOf(s: Spread, unit: (n: number) => string): string {
  if (!Number.isFinite(s.median)) return 'n/a';
  return s.values.length > 1 ? `${unit(s.median)} (${num(s.min)}–${num(s.max)})` : unit(s.median);
}
