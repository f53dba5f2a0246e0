import { existsSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const API = 'apps/api/src/api.module.ts';
const WORKER = 'apps/worker/src/worker.module.ts';

export interface Capability {
  /** Its folder, from the repository's root. */
  folder: string;
  /** The Nest module the apps import from it. */
  module: string;
  /** The app modules that list it. */
  wiredIn: readonly string[];
  /** Its own end-to-end tests, which go with it (its unit specs are in its folder). */
  tests: readonly string[];
}

/**
 * The optional capabilities (docs/development.md#removing-a-capability lists the same): each a
 * folder with one Nest module, listed by one line per app, and its own tests. Another suite's case
 * that needs one is written `ifPresent('batch').it(…)`, so a service that deleted it still passes.
 */
export const CAPABILITIES = {
  webhooks: { folder: 'apps/api/src/webhooks', module: 'WebhooksModule', wiredIn: [API], tests: ['test/webhooks.e2e-spec.ts', 'test/webhooks-egress.e2e-spec.ts'] },
  idempotency: { folder: 'apps/api/src/idempotency', module: 'IdempotencyModule', wiredIn: [API], tests: ['test/idempotency.e2e-spec.ts'] },
  schedules: { folder: 'apps/api/src/schedules', module: 'SchedulesModule', wiredIn: [API], tests: ['test/schedules.e2e-spec.ts'] },
  batch: { folder: 'apps/api/src/batch', module: 'BatchModule', wiredIn: [API], tests: ['test/batch.e2e-spec.ts'] },
  demo: { folder: 'apps/api/src/demo', module: 'DemoModule', wiredIn: [API], tests: ['test/demo.e2e-spec.ts'] },
  docs: { folder: 'apps/api/src/docs', module: 'ApiDocsModule', wiredIn: [API], tests: ['test/docs.e2e-spec.ts', 'test/openapi-lint.e2e-spec.ts'] },
  'queue-dashboard': { folder: 'apps/api/src/queue-dashboard', module: 'QueueDashboardModule', wiredIn: [API], tests: ['test/dashboard.e2e-spec.ts'] },
  // why no tests of its own: its cases share test/tenancy.e2e-spec.ts's stack with API keys (written ifPresent('fair-share')).
  'fair-share': { folder: 'apps/api/src/fair-share', module: 'FairShareModule', wiredIn: [API], tests: [] },
  // why no suite of its own: its cases share test/files.e2e-spec.ts's stacks (written ifPresent('uploads')); its file is the sweep they call.
  uploads: { folder: 'apps/api/src/uploads', module: 'UploadsModule', wiredIn: [API], tests: ['test/support/uploads-sweep.ts'] },
  'dead-letters': { folder: 'apps/api/src/dead-letters', module: 'DeadLettersModule', wiredIn: [API, WORKER], tests: ['test/dead-letters.e2e-spec.ts'] },
  tracing: { folder: 'libs/otel', module: 'OtelTracingModule', wiredIn: [API, WORKER], tests: ['test/tracing.e2e-spec.ts'] },
} as const satisfies Record<string, Capability>;

export type CapabilityName = keyof typeof CAPABILITIES;

/** Whether this copy of the template still has the capability (a service may have deleted it). */
export function present(...names: CapabilityName[]): boolean {
  return names.every((name) => existsSync(join(ROOT, CAPABILITIES[name].folder)));
}

/** `describe` and `it` for cases that need the capabilities: skipped, and reported so, without them. */
export function ifPresent(...names: CapabilityName[]): { describe: jest.Describe; it: jest.It } {
  return present(...names) ? { describe, it } : { describe: describe.skip, it: it.skip };
}
