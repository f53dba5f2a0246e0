import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { AppProcess, stackEnv, startApp } from './support/apps';
import { getJob, request, submit } from './support/http';
import { OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver';

const REPORT_MODULES = `--require ${join(__dirname, 'fixtures', 'report-otel-modules.js')}`;
const REQUEST_ID = 'nest_offload.request_id';
/** OTLP span kinds and status codes. */
const KIND = { server: 2, producer: 4, consumer: 5 };
const STATUS_ERROR = 2;

/** The OpenTelemetry SDK packages a stopped app loaded, from the fixture's line on stderr. */
function loadedOtelModules(app: AppProcess): string[] {
  const line = /otel-modules (\[.*\])/.exec(app.stderr.join(''))?.[1];
  if (!line) throw new Error(`${app.kind} printed no otel-modules line:\n${app.stderr.join('')}`);
  return JSON.parse(line) as string[];
}

/**
 * With OTEL_EXPORTER_OTLP_ENDPOINT set, one request is one trace: the API's HTTP span, BullMQ's add,
 * the worker's process span and the pool thread's run, exported over OTLP/HTTP to a receiver here.
 */
describe('tracing', () => {
  const apps: AppProcess[] = [];
  let receiver: OtlpReceiver | undefined;

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.stop()));
    await receiver?.close();
  });

  const start = async (kind: 'api' | 'worker', env: Record<string, string | undefined>) => {
    const app = await startApp(kind, env);
    apps.push(app);
    return app;
  };

  it('follows a request from the HTTP call through the queue and the worker into the thread, with its request id', async () => {
    receiver = await OtlpReceiver.start();
    const env = stackEnv('tracing', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, NODE_OPTIONS: REPORT_MODULES });
    const api = await start('api', env);
    const worker = await start('worker', env);

    const requestId = `trace-${randomBytes(4).toString('hex')}`;
    const done = await submit(api.url, 'fibonacci', { n: 21 }, { wait: 15, headers: { 'x-request-id': requestId } });
    expect(done.body).toMatchObject({ status: 'completed', result: 10946 });
    // A thread that dies sends no span back: the worker records the attempt's span itself.
    const crashId = `trace-crash-${randomBytes(4).toString('hex')}`;
    const crashed = await submit(api.url, 'chaos', { mode: 'exit' }, { wait: 20, headers: { 'x-request-id': crashId } });
    expect(crashed.body).toMatchObject({ status: 'failed', error: { code: 'JOB_CRASHED' } });
    // An incoming W3C traceparent is continued, not replaced.
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    expect((await request(`${api.url}/v1/jobs/${done.body.id}`, { headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` } })).status).toBe(200);
    expect((await getJob(api.url, done.body.id)).status).toBe(200);

    // Stopping flushes what each app has buffered.
    await Promise.all([api.stop(), worker.stop()]);
    const spans = receiver.spans;
    expect(receiver.refused).toEqual([]);

    const http = spans.find((s) => s.scope === 'nest-offload' && s.attributes[REQUEST_ID] === requestId && s.attributes['http.request.method'] === 'POST');
    expect(http).toMatchObject({ service: 'nest-offload-api', kind: KIND.server, name: 'POST /v1/jobs/:type' });
    expect(http!.attributes).toMatchObject({ 'http.route': '/v1/jobs/:type', 'http.response.status_code': 200 });
    const trace = spans.filter((s) => s.traceId === http!.traceId);
    const one = (what: string, match: (s: ReceivedSpan) => boolean) => {
      const found = trace.filter(match);
      if (found.length !== 1) throw new Error(`expected one ${what} span in the trace, found ${found.length}: ${JSON.stringify(trace.map((s) => s.name))}`);
      return found[0];
    };
    const add = one('add', (s) => s.service === 'nest-offload-api' && s.scope === 'bullmq' && s.kind === KIND.producer);
    const processed = one('process', (s) => s.service === 'nest-offload-worker' && s.scope === 'bullmq' && s.kind === KIND.consumer);
    const run = one('thread run', (s) => s.scope === 'nest-offload-thread');
    expect(add.name).toBe('add default.fibonacci');
    expect([add.parentSpanId, processed.parentSpanId, run.parentSpanId]).toEqual([http!.spanId, add.spanId, processed.spanId]);
    expect(run).toMatchObject({ service: 'nest-offload-worker', name: 'run fibonacci' });
    expect(run.attributes).toMatchObject({ [REQUEST_ID]: requestId, 'nest_offload.job.id': done.body.id, 'nest_offload.job.type': 'fibonacci', 'nest_offload.job.attempt': 1 });
    expect(run.attributes['thread.id']).toBeGreaterThan(0);
    expect(processed.attributes).toMatchObject({ [REQUEST_ID]: requestId, 'bullmq.job.id': done.body.id });
    // Every span that names the request is in its trace; no span carries a job's result.
    expect(new Set(spans.filter((s) => s.attributes[REQUEST_ID] === requestId).map((s) => s.traceId))).toEqual(new Set([http!.traceId]));
    expect(spans.flatMap((s) => s.events).filter((e) => 'bullmq.job.result' in e.attributes)).toEqual([]);

    const crashRuns = spans.filter((s) => s.scope === 'nest-offload-thread' && s.attributes[REQUEST_ID] === crashId);
    expect(crashRuns).toHaveLength(2); // chaos: 2 attempts
    for (const span of crashRuns) expect(span.status).toMatchObject({ code: STATUS_ERROR, message: expect.stringContaining("thread died") });
    expect(new Set(crashRuns.map((s) => s.traceId)).size).toBe(1);

    const continued = spans.find((s) => s.scope === 'nest-offload' && s.traceId === callerTrace);
    expect(continued).toMatchObject({ parentSpanId: callerSpan, name: 'GET /v1/jobs/:id' });

    expect(loadedOtelModules(api)).toEqual(expect.arrayContaining(['@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-http', 'bullmq-otel']));
    expect(loadedOtelModules(worker)).toEqual(expect.arrayContaining(['@opentelemetry/sdk-trace', 'bullmq-otel']));
  });

  it('traces a share of requests with parentbased_traceidratio, and always those a caller samples', async () => {
    const sampled = await OtlpReceiver.start();
    try {
      const env = stackEnv('tracing-ratio', { OTEL_EXPORTER_OTLP_ENDPOINT: sampled.url, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
      const api = await start('api', env);
      expect((await submit(api.url, 'fibonacci', { n: 20 })).status).toBe(202);
      const callerTrace = randomBytes(16).toString('hex');
      const traceparent = `00-${callerTrace}-${randomBytes(8).toString('hex')}-01`;
      expect((await submit(api.url, 'fibonacci', { n: 19 }, { headers: { traceparent } })).status).toBe(202);
      await api.stop();
      expect(sampled.spans.length).toBeGreaterThanOrEqual(2); // the server span and BullMQ's add
      expect(new Set(sampled.spans.map((s) => s.traceId))).toEqual(new Set([callerTrace]));
    } finally {
      await sampled.close();
    }
  });

  it('loads no part of the OpenTelemetry SDK when OTEL_EXPORTER_OTLP_ENDPOINT is not set', async () => {
    const env = stackEnv('tracing-off', { NODE_OPTIONS: REPORT_MODULES });
    const api = await start('api', env);
    const worker = await start('worker', env);
    expect((await submit(api.url, 'fibonacci', { n: 20 }, { wait: 15 })).body).toMatchObject({ status: 'completed' });
    await Promise.all([api.stop(), worker.stop()]);
    expect(loadedOtelModules(api)).toEqual([]);
    expect(loadedOtelModules(worker)).toEqual([]);
  });
});
