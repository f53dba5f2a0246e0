import { existsSync } from 'node:fs';
import { readRepoFile } from './deploy/app-source';
import type { Manifest } from './deploy/kustomize';
import { K8sObject, readYaml, selects, Workload } from './deploy/manifests';
import { schemaErrors, unknownFieldErrors } from './deploy/schemas';
import { metricNamesIn } from './support/promql';

/**
 * Static checks of docker/grafana and the Kubernetes monitoring component: the files parse, the
 * PrometheusRule carries exactly the alert rules, and the ServiceMonitor reaches every pod's
 * metrics port. That every expression names only exported metrics is checked against a live scrape
 * in metrics.e2e-spec.ts.
 */
interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}
type RuleGroups = Array<{ name: string; rules: Rule[] }>;
interface Kustomization {
  resources: string[];
}

const COMPONENT = 'docker/kubernetes/components/monitoring';
// The base manifests: where they live now or, once moved, under docker/kubernetes.
const BASE = ['docker/kubernetes/base', 'deploy/k8s'].find((dir) => existsSync(`${__dirname}/../${dir}/kustomization.yaml`))!;

describe('docker/grafana/alerts.yaml', () => {
  const groups = (readYaml('docker/grafana/alerts.yaml')[0] as { groups: RuleGroups }).groups;
  const rules = groups.flatMap((g) => g.rules);

  it('alerts on a growing backlog, slow starts, a stalled event loop, failing or expiring jobs, replaced threads and Redis down', () => {
    expect(rules.map((r) => r.alert).sort()).toEqual(
      [
        'NestOffloadBacklogGrowing',
        'NestOffloadCacheRedisDown',
        'NestOffloadEventLoopDelayHigh',
        'NestOffloadJobsExpiring',
        'NestOffloadJobsFailing',
        'NestOffloadRedisDown',
        'NestOffloadThreadsReplaced',
        'NestOffloadWaitTimeOverTarget',
      ].sort(),
    );
  });

  it.each(rules.map((r) => [r.alert, r] as const))('%s has an expression, a severity and words for the person paged', (_name, rule) => {
    expect(typeof rule.expr).toBe('string');
    expect(metricNamesIn(rule.expr).length).toBeGreaterThan(0);
    expect(['warning', 'critical']).toContain(rule.labels.severity);
    expect(rule.annotations.summary.length).toBeGreaterThan(10);
    expect(rule.annotations.description.length).toBeGreaterThan(20);
    if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/);
  });

  it('is what the PrometheusRule of the Kubernetes component carries, group for group', () => {
    const [rule] = readYaml(`${COMPONENT}/prometheusrule.yaml`) as Array<K8sObject & { spec: { groups: RuleGroups } }>;
    expect(rule).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
    expect(rule.spec.groups).toEqual(groups);
  });
});

describe('docker/grafana/dashboard.json', () => {
  type Panel = { id: number; type: string; title: string; datasource?: { uid: string }; gridPos: object; targets?: Array<{ expr: string; refId: string }> };
  const dashboard = JSON.parse(readRepoFile('docker/grafana/dashboard.json')) as { uid: string; panels: Panel[]; templating: { list: Array<{ name: string; type: string }> } };
  const graphs = dashboard.panels.filter((p) => p.type !== 'row');

  it('is an importable dashboard: a uid, unique panel ids, a position for each', () => {
    expect(dashboard.uid).toBe('nest-offload');
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    for (const panel of dashboard.panels) expect(panel.gridPos).toEqual(expect.objectContaining({ h: expect.any(Number), w: expect.any(Number) }));
  });

  it('queries the chosen Prometheus in every panel', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource' });
    for (const panel of graphs) {
      expect(panel.datasource?.uid).toBe('${datasource}');
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const target of panel.targets!) expect(target.expr).toMatch(/nest_offload_/);
    }
  });
});

describe(COMPONENT, () => {
  const kustomization = readYaml(`${COMPONENT}/kustomization.yaml`)[0] as Kustomization & { kind: string };
  const objects = kustomization.resources.flatMap((file) => readYaml(`${COMPONENT}/${file}`)) as K8sObject[];
  const service = objects.find((o) => o.kind === 'Service') as K8sObject & {
    spec: { selector: Record<string, string>; ports: Array<{ name: string; targetPort: string | number }>; publishNotReadyAddresses?: boolean };
  };
  const monitor = objects.find((o) => o.kind === 'ServiceMonitor') as K8sObject & {
    spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string }> };
  };

  it('is a kustomize Component of a Service, a ServiceMonitor and a PrometheusRule', () => {
    expect(kustomization.kind).toBe('Component');
    expect(objects.map((o) => o.kind).sort()).toEqual(['PrometheusRule', 'Service', 'ServiceMonitor']);
  });

  // As any overlay adds them (overlays/prod does; test/kubernetes.e2e-spec.ts checks it rendered).
  it("is valid against the Kubernetes and Prometheus Operator's schemas, unknown fields included", () => {
    expect(schemaErrors(objects as Manifest[])).toEqual([]);
    expect(unknownFieldErrors(objects as Manifest[])).toEqual([]);
  });

  it('scrapes /metrics on the port the Service names, and keeps scraping pods that are not ready', () => {
    expect(selects(monitor.spec.selector.matchLabels, service.metadata.labels ?? {})).toBe(true);
    for (const endpoint of monitor.spec.endpoints) {
      expect(endpoint.path).toBe('/metrics');
      expect(service.spec.ports.map((p) => p.name)).toContain(endpoint.port);
    }
    expect(service.spec.publishNotReadyAddresses).toBe(true);
  });

  it(`selects the pods of every Deployment in ${BASE}, each with the port it targets`, () => {
    const base = readYaml(`${BASE}/kustomization.yaml`)[0] as Kustomization;
    const deployments = base.resources.flatMap((file) => readYaml(`${BASE}/${file}`) as Workload[]).filter((o) => o.kind === 'Deployment');
    expect(deployments.length).toBeGreaterThanOrEqual(2);
    for (const deployment of deployments) {
      expect(selects(service.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
      const ports = deployment.spec.template.spec.containers.flatMap((c) => c.ports ?? []).map((p) => p.name);
      for (const port of service.spec.ports) expect(ports).toContain(port.targetPort);
    }
  });
});

describe('metricNamesIn (the test helper reading PromQL)', () => {
  it('finds the metrics and nothing else', () => {
    expect(
      metricNamesIn('histogram_quantile(0.95, sum by (le, queue) (rate(nest_offload_job_wait_seconds_bucket{queue=~"$queue", x="a{b}"}[$__rate_interval]))) > 1e3'),
    ).toEqual(['nest_offload_job_wait_seconds_bucket']);
    expect(metricNamesIn('max by (queue) (deriv(a_metric[15m])) > 0.1 and on (queue) b_metric offset 5m')).toEqual(['a_metric', 'b_metric']);
    expect(metricNamesIn('label_values(nest_offload_queue_backlog, queue)')).toEqual(['nest_offload_queue_backlog']);
    expect(() => metricNamesIn('rates(x[5m])')).toThrow(/unknown PromQL function "rates"/);
  });
});
