/**
 * The metric names a PromQL expression (or a Grafana query like `label_values(metric, label)`)
 * selects. Not a full parser: it removes what cannot name a metric (strings, label matchers, ranges,
 * grouping clauses, template variables, numbers) and reads the identifiers left. An identifier that
 * is followed by `(` must be a known function, so a typo fails instead of passing as a metric.
 */
const FUNCTIONS = new Set([
  'abs', 'absent', 'absent_over_time', 'avg', 'avg_over_time', 'bottomk', 'ceil', 'changes', 'clamp', 'clamp_max', 'clamp_min',
  'count', 'count_over_time', 'delta', 'deriv', 'floor', 'group', 'histogram_quantile', 'idelta', 'increase', 'irate',
  'label_replace', 'label_values', 'last_over_time', 'max', 'max_over_time', 'min', 'min_over_time', 'predict_linear',
  // remove:job: not a job type (PromQL's own sort and sum)
  'quantile', 'quantile_over_time', 'rate', 'resets', 'round', 'scalar', 'sort', 'sort_desc', 'stddev', 'sum', 'sum_over_time',
  'time', 'timestamp', 'topk', 'vector',
]);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan']);

export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""') // string literals
    .replace(/\$\{?\w+\}?/g, '') // Grafana variables ($__rate_interval, ${queue})
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // grouping labels
    .replace(/\boffset\s+\S+/g, ' ');
  const names: string[] = [];
  for (const match of stripped.matchAll(/(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = match[0];
    const isCall = /^\s*\(/.test(stripped.slice(match.index! + word.length));
    if (isCall) {
      if (!FUNCTIONS.has(word)) throw new Error(`unknown PromQL function "${word}" in: ${expr}`);
      continue;
    }
    if (KEYWORDS.has(word.toLowerCase())) continue;
    names.push(word);
  }
  // label_values(metric, label): the second argument is a label, not a metric.
  const labelValues = /label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*(\w+)\s*\)/.exec(stripped);
  return labelValues ? names.filter((n) => n !== labelValues[2]) : names;
}
