#!/usr/bin/env node
// `npm run test:image`: builds both targets of docker/Dockerfile with Debian's podman, nothing from
// Docker Hub, and runs them as real containers against a Redis it starts. CI runs it after
// `npm test` (.ci/run). It checks readiness, the compose healthchecks and probes, one job of each
// type (GET /v1/job-types: each type's declared example, its result checked against the type's
// output schema), one pool thread under `--cpus 1`,
// the drain on `podman stop` (SIGTERM) mid-job with exit 0, and the images' contents (nothing
// writable by uid 1000; no dev dependency, package nothing loads, test or test source map).
//
// Needs Linux, root (it installs podman, runc, slirp4netns, debootstrap and redis-server from
// Debian when missing; debootstrap needs root) and the npm registry. The base image is made once
// and kept in podman's storage (base-image.mjs). Where it cannot run it fails, saying what it could
// not do; NEST_OFFLOAD_SKIP_IMAGE_TEST=1 turns that into a loud skip (exit 0). CI never sets it.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';
import { ensureBaseImage, lockedNode } from './base-image.mjs';
import { appProblems, writableByApp } from './image-contents.mjs';
import { buildMounts, buildTarget, HOST_FROM_CONTAINER, mountImage, PORTS, removeLeftovers, runContainer, startRedis } from './podman.mjs';
import { cleanUp, fail, Failure, has, http, log, out, ROOT, seconds, sh, waitFor } from './shell.mjs';

const OPT_OUT = 'NEST_OFFLOAD_SKIP_IMAGE_TEST';
const TOOLS = ['podman', 'runc', 'slirp4netns', 'debootstrap', 'redis-server']; // commands and their Debian packages alike
const RUN_ID = `${process.pid}-${randomBytes(3).toString('hex')}`;

const started = Date.now();
const steps = [];

async function step(name, fn) {
  const t0 = Date.now();
  log(`${name}…`);
  const result = await fn();
  steps.push({ name, ms: Date.now() - t0 });
  log(`${name}: ok (${seconds(Date.now() - t0)})`);
  return result;
}

/** The base image the Dockerfile names, the Node the tests run on (the stand-in carries the same) and the compose file. */
function readRepository() {
  const dockerfile = readFileSync(join(ROOT, 'docker/Dockerfile'), 'utf8');
  const stages = new Set([...dockerfile.matchAll(/^FROM\s.*\sAS\s+(\S+)/gim)].map((m) => m[1].toLowerCase()));
  const bases = new Set(
    [...dockerfile.matchAll(/^FROM\s+(?:--platform=\S+\s+)?(\S+)/gim)].map((m) => m[1]).filter((image) => !stages.has(image.toLowerCase())),
  );
  if (bases.size !== 1) fail(`docker/Dockerfile: expected one base image, found ${[...bases].join(', ') || 'none'}`);
  const [base] = bases;
  const match = /^node:(\d+)-([a-z]+)-slim$/.exec(base);
  if (!match) fail(`docker/Dockerfile: the base ${base} is not node:<major>-<debian suite>-slim, which this script knows how to stand in for`);
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
  const node = lockedNode(lock);
  const nodeVersion = node.version;
  if (nodeVersion.split('.')[0] !== match[1]) fail(`the tests run Node ${nodeVersion} but docker/Dockerfile builds on ${base}`);
  const compose = parseYaml(readFileSync(join(ROOT, 'docker/compose.yaml'), 'utf8'));
  return { base, suite: match[2], node, nodeVersion, lock, compose };
}

/** Undefined when everything is there (installed from Debian when missing and root), else what is missing. */
function prerequisites() {
  if (process.platform !== 'linux') return `podman containers need Linux (this is ${process.platform})`;
  const missing = () => TOOLS.filter((tool) => !has(tool));
  if (missing().length && process.getuid?.() === 0 && has('apt-get')) {
    log(`installing ${missing().join(', ')} from Debian`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    sh('sh', ['-c', 'apt-get update -qq && apt-get install -y -qq "$@"', 'sh', ...missing()], { allowFail: true, env });
  }
  const still = missing();
  return still.length ? `missing ${still.join(', ')}; install them (as root: apt-get install ${still.join(' ')}) and run again` : undefined;
}

async function main() {
  const repo = readRepository();
  const missing = prerequisites();
  if (missing) {
    const what = `the images were NOT built or run: ${missing}`;
    if (process.env[OPT_OUT] === '1') {
      console.error(`[image] SKIPPED (${OPT_OUT}=1): ${what}. Nothing about docker/Dockerfile was verified.`);
      return 0;
    }
    console.error(`[image] FAILED: ${what}. (${OPT_OUT}=1 skips this check where containers cannot run.)`);
    return 1;
  }
  if (process.getuid?.() !== 0) log('not root: rootless podman must be set up already, and a missing base image cannot be made (debootstrap needs root)');

  await step(`base image ${repo.base} (Node ${repo.nodeVersion})`, () => ensureBaseImage(repo.base, repo.suite, repo.node));
  removeLeftovers();
  const mounts = buildMounts();
  const images = {};
  for (const target of Object.keys(PORTS)) images[target] = await step(`podman build --target ${target}`, () => buildTarget(target, mounts));

  const redisPort = await startRedis();
  const apiKey = randomBytes(24).toString('hex');
  const auth = { authorization: `Bearer ${apiKey}` };
  const env = { REDIS_URL: `redis://${HOST_FROM_CONTAINER}:${redisPort}`, REDIS_PREFIX: `image-test-${RUN_ID}` };
  // Production as shipped: NODE_ENV=production from the image, so the API needs its keys.
  const api = runContainer('api', images.api, RUN_ID, { ...env, API_KEYS: `image-test=${apiKey}` });
  // No WORKER_THREADS: the worker must read the --cpus quota itself.
  const worker = runContainer('worker', images.worker, RUN_ID, env, ['--cpus', '1']);
  const apps = [api, worker];
  const submit = (type, input, wait) =>
    http(`${api.url}/v1/jobs/${type}`, { method: 'POST', body: input, headers: { ...auth, ...(wait ? { prefer: `wait=${wait}` } : {}) } });
  const view = async (id) => (await http(`${api.url}/v1/jobs/${id}`, { headers: auth })).json;
  const metric = async (app, name) =>
    (await http(`${app.url}/metrics`)).text.split('\n').find((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `)) ?? '';

  try {
    await step("both containers ready (read-only, no capabilities, as the image's user)", async () => {
      for (const app of apps) {
        await waitFor(`${app.kind} ready at ${app.url}`, async () => (await http(`${app.url}/health/ready`)).status === 200, 90_000);
        const uid = out('podman', ['exec', app.name, 'id', '-u']);
        const status = out('podman', ['exec', app.name, 'cat', '/proc/1/status']);
        const caps = ['CapEff', 'CapBnd'].map((set) => `${set} ${new RegExp(`${set}:\\s*(\\S+)`).exec(status)?.[1]}`).join(', ');
        const wrote = sh('podman', ['exec', app.name, 'sh', '-c', 'touch /app/x || touch /x'], { quiet: true, allowFail: true }).status === 0;
        if (uid !== '1000') fail(`${app.kind} runs as uid ${uid}`);
        if (!/^CapEff 0+, CapBnd 0+$/.test(caps)) fail(`${app.kind} holds capabilities: ${caps}`);
        if (wrote) fail(`${app.kind} could write to its root filesystem`);
        log(`${app.kind}: ${app.url}, uid ${uid}, ${caps}, root read-only`);
      }
    });

    await step('compose healthchecks and probes', async () => {
      for (const app of apps) {
        const test = repo.compose?.services?.[app.kind]?.healthcheck?.test;
        if (Array.isArray(test) && ['CMD', 'CMD-SHELL'].includes(test[0])) {
          const run = sh('podman', ['exec', app.name, ...(test[0] === 'CMD' ? test.slice(1) : ['sh', '-c', test[1]])], { quiet: true, allowFail: true });
          if (run.status !== 0) fail(`${app.kind}: docker/compose.yaml's healthcheck exits ${run.status} in the container ${run.stderr}`);
        } else {
          log(`${app.kind}: docker/compose.yaml has no CMD healthcheck to run`);
        }
        for (const path of ['/health/live', '/health/ready', '/metrics']) {
          const res = await http(`${app.url}${path}`);
          if (res.status !== 200) fail(`${app.kind} ${path}: ${res.status} ${res.text.slice(0, 200)}`);
        }
        const version = /version="v([^"]+)"/.exec(await metric(app, 'nest_offload_nodejs_version_info'))?.[1];
        if (version !== repo.nodeVersion) fail(`${app.kind} runs Node ${version}, the tests ${repo.nodeVersion}`);
      }
      log(`both on Node ${repo.nodeVersion}, as the tests`);
    });

    await step('--cpus 1 gives one pool thread', async () => {
      const threads = Number((await metric(worker, 'nest_offload_pool_threads')).split(' ').pop());
      if (threads !== 1) fail(`the worker under --cpus 1 runs ${threads} pool threads`);
      if (availableParallelism() < 2) log('this host has one CPU: the quota and the core count agree, so this check cannot tell them apart here');
    });

    await step('one job of each type', async () => {
      const listed = (await http(`${api.url}/v1/job-types`, { headers: auth })).json ?? [];
      if (!listed.length) fail('GET /v1/job-types listed no types');
      const types = listed.map((t) => t.type);
      // why the declared examples: one declaration drives everything, so a new type is covered here
      // with no second list to keep (defineJob checks each example against the input schema).
      // A type that takes files (thumbnail) has no JSON example: the API refuses JSON for it with 415,
      // and the image runs without a blob store (BLOB_STORE_URL unset), so it is named, not run.
      const takesFiles = [];
      for (const t of listed.filter((t) => !t.examples?.length)) {
        const res = await http(`${api.url}/v1/jobs/${t.type}`, { method: 'POST', headers: auth, body: {} });
        if (res.status === 415 && /multipart/i.test(res.text)) takesFiles.push(t.type);
      }
      const without = listed.filter((t) => !t.examples?.length && !takesFiles.includes(t.type)).map((t) => t.type);
      if (without.length) fail(`no example for job type(s) ${without.join(', ')}: give each an \`examples\` input in its declaration`);
      if (takesFiles.length) log(`not run here, they take files (multipart): ${takesFiles.join(', ')}`);
      const ajv = new Ajv2020({ strict: false });
      await Promise.all(
        listed.filter((t) => !takesFiles.includes(t.type)).map(async ({ type, examples: [input], outputSchema }) => {
          const res = await submit(type, input, 60);
          if (res.status !== 200 || res.json?.status !== 'completed') fail(`${type}: ${res.status} ${res.text.slice(0, 300)}`);
          if (!ajv.validate(outputSchema, res.json.result)) fail(`${type}: result ${JSON.stringify(res.json.result).slice(0, 300)} does not match its output schema: ${ajv.errorsText()}`);
        }),
      );
      log(`completed, results matching their output schemas: ${types.filter((t) => !takesFiles.includes(t)).join(', ')}`);
    });

    await step('pool threads on SCHED_IDLE in the container (WORKER_SCHED=idle, set by the image)', async () => {
      // why here too: chrt must be in the image and the container's seccomp profile must allow the policy.
      // Field 41 of /proc/<pid>/task/<tid>/stat is the policy (5 = SCHED_IDLE); the name before it may hold spaces.
      const policies = out('podman', ['exec', worker.name, 'sh', '-c', 'for t in /proc/1/task/*; do sed "s/.*) //" $t/stat | cut -d" " -f39; done'])
        .split('\n')
        .map(Number);
      const idle = policies.filter((p) => p === 5).length;
      if (/WORKER_SCHED=idle/.test(worker.logs())) fail(`the worker could not use SCHED_IDLE: ${/WORKER_SCHED=idle[^"]*/.exec(worker.logs())?.[0]}`);
      if (idle !== 1) fail(`${idle} of the worker's ${policies.length} threads are on SCHED_IDLE, not its one pool thread`);
      log(`the pool thread on SCHED_IDLE, the other ${policies.length - 1} threads not`);
    });

    await step('worker drains a running job on podman stop (SIGTERM) and exits 0', async () => {
      // A `fibonacci` of about 4 s, sized from a short one, so the stop lands mid-job on any machine.
      // why n from 33 up: the examples step ran n = 30; a cached n would answer without a job.
      const probe = (await submit('fibonacci', { n: 33 }, 60)).json;
      const probeMs = Date.parse(probe?.finishedAt) - Date.parse(probe?.startedAt);
      if (!(probeMs >= 0)) fail(`fibonacci 33: ${JSON.stringify(probe)}`);
      // Each step of n costs about the golden ratio (1.618) times the one before.
      const n = Math.min(46, Math.max(34, 33 + Math.round(Math.log(4000 / Math.max(1, probeMs)) / Math.log(1.618))));
      const { id } = (await submit('fibonacci', { n })).json;
      await waitFor(
        'the long job to run',
        async () => {
          const job = await view(id);
          if (job?.status === 'completed') fail('the long job finished before the stop: it was sized too small');
          return job?.status === 'active';
        },
        60_000,
      );
      const t0 = Date.now();
      sh('podman', ['stop', '--time', '60', worker.name], { quiet: true });
      const code = worker.exitCode();
      const job = await view(id);
      if (code !== '0') fail(`the worker exited ${code} on SIGTERM`);
      if (job?.status !== 'completed') fail(`the job running at the stop is ${job?.status}, not completed`);
      if (!/worker stopped cleanly/.test(worker.logs())) fail('the worker did not log its clean stop');
      log(`fibonacci ${n} was running at the stop: the draining worker finished it and exited 0 after ${seconds(Date.now() - t0)}`);
    });

    await step('API drains on podman stop and exits 0', async () => {
      sh('podman', ['stop', '--time', '30', api.name], { quiet: true });
      if (api.exitCode() !== '0') fail(`the API exited ${api.exitCode()} on SIGTERM`);
      if (!/SIGTERM received: draining/.test(api.logs())) fail('the API did not log its drain');
    });
  } catch (error) {
    for (const app of apps) console.error(`\n--- podman logs ${app.kind} (last 40 lines) ---\n${app.logs().trim().split('\n').slice(-40).join('\n')}`);
    throw error;
  }

  await step('image contents: nothing writable by uid 1000, no dev dependency, test or test source map', () => {
    for (const [target, image] of Object.entries(images)) {
      const user = out('podman', ['image', 'inspect', '--format', '{{.Config.User}}', image]);
      if (user !== '1000:1000') fail(`${target}: USER is "${user}", expected 1000:1000`);
      const rootfs = mountImage(image);
      const writable = writableByApp(rootfs);
      if (writable.length) fail(`${target}: writable by uid 1000:\n  ${writable.slice(0, 30).join('\n  ')}`);
      const { problems, packages } = appProblems(rootfs, repo.lock);
      if (problems.length) fail(`${target}:\n  ${problems.join('\n  ')}`);
      const mb = Number(out('podman', ['image', 'inspect', '--format', '{{.Size}}', image])) / 1e6;
      log(`${target}: ${packages} packages, each reached from package.json's dependencies; ${mb.toFixed(0)} MB`);
    }
  });
  return 0;
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    console.error(`[image] ${signal}: stopping what this run started`);
    cleanUp();
    process.exit(1);
  });
}

let code;
try {
  code = await main();
} catch (error) {
  console.error(`[image] FAILED: ${error instanceof Failure ? error.message : error.stack}`);
  code = 1;
} finally {
  cleanUp();
}
if (code === 0 && steps.length) {
  console.log(`[image] all checks passed in ${seconds(Date.now() - started)}:`);
  for (const { name, ms } of steps) console.log(`  ${seconds(ms).padStart(8)}  ${name}`);
}
process.exit(code);
