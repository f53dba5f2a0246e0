// What a built image holds, read from its mounted root filesystem: who may write where, and what
// /app carries beyond the compiled apps and the packages production code can reach.
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

const APP_UID = 1000;

/**
 * Every path uid 1000 (group 1000) could write to, besides sticky world-writable directories (/tmp,
 * /var/tmp, /run/lock: temp dirs by design, and the containers run with a read-only root anyway) and
 * the base image's home of `node`.
 */
export function writableByApp(rootfs) {
  const found = [];
  const walk = (rel) => {
    for (const entry of readdirSync(join(rootfs, rel))) {
      const path = `${rel}/${entry}`;
      if (['/proc', '/sys', '/dev', '/home/node'].includes(path)) continue;
      // why /blobs may be the app user's: it is only the blob store volume's mount point (docker/Dockerfile),
      // which a new named volume takes its owner from; the image must hold nothing in it.
      if (path === '/blobs') {
        if (readdirSync(join(rootfs, path)).length) found.push(`${path} holds files (an empty mount point only)`);
        continue;
      }
      const st = lstatSync(join(rootfs, path));
      if (st.isSymbolicLink()) continue;
      const tempDir = st.isDirectory() && (st.mode & 0o1002) === 0o1002;
      const writable = (st.uid === APP_UID && st.mode & 0o200) || (st.gid === APP_UID && st.mode & 0o020) || st.mode & 0o002;
      if (writable && !tempDir) found.push(`${path} (${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid})`);
      if (st.isDirectory()) walk(path);
    }
  };
  walk('');
  return found;
}

/**
 * What /app holds that it should not: anything besides dist, node_modules and package.json;
 * packages no production dependency reaches (dev dependencies, or trees only an optional peer
 * names); tests, TypeScript sources, and source maps of tests or the bench.
 */
export function appProblems(rootfs, lock) {
  const app = join(rootfs, 'app');
  const problems = [];
  const top = readdirSync(app).sort();
  if (!isDeepStrictEqual(top, ['dist', 'node_modules', 'package.json'])) problems.push(`/app holds ${top.join(', ')}; expected dist, node_modules, package.json`);

  const installed = installedPackages(app);
  const production = productionPackages(lock);
  const unneeded = new Map();
  for (const key of installed.filter((k) => !production.has(k))) {
    const meta = lock.packages[key];
    const why = !meta ? 'not in package-lock.json' : meta.dev ? 'dev dependencies' : 'packages nothing in production loads (only an optional peer or a dev dependency names them)';
    unneeded.set(why, [...(unneeded.get(why) ?? []), key.replace(/^node_modules\//, '')]);
  }
  for (const [why, names] of unneeded) problems.push(`/app/node_modules: ${names.length} ${why}: ${names.slice(0, 12).join(', ')}${names.length > 12 ? ', …' : ''}`);

  const walk = (rel) => {
    for (const entry of readdirSync(join(app, rel), { withFileTypes: true })) {
      const path = `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        if (/^(test|tests|__tests__|bench)$/.test(entry.name)) problems.push(`/app${path}: a test or bench directory`);
        walk(path);
      } else if (/\.(spec|e2e-spec|test)\.[cm]?js(\.map)?$|(?<!\.d)\.ts$/.test(entry.name)) {
        problems.push(`/app${path}: a test or a TypeScript source`);
      } else if (entry.name.endsWith('.map')) {
        const sources = JSON.parse(readFileSync(join(app, path), 'utf8')).sources ?? [];
        const tests = sources.filter((s) => /(^|\/)(test|bench)\/|\.(spec|e2e-spec)\.ts$/.test(s));
        if (tests.length) problems.push(`/app${path}: maps test sources ${tests.join(', ')}`);
      }
    }
  };
  walk('/dist');
  return { problems, packages: installed.length };
}

/** Installed packages under `app`, as lock-file keys (node_modules/a, node_modules/a/node_modules/@s/b). */
function installedPackages(app) {
  const found = [];
  const walk = (key) => {
    const dir = join(app, key, 'node_modules');
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@') ? readdirSync(join(dir, entry)).map((s) => `${entry}/${s}`) : [entry];
      for (const name of names) {
        const child = `${key ? `${key}/` : ''}node_modules/${name}`;
        found.push(child);
        walk(child);
      }
    }
  };
  walk('');
  return found;
}

/**
 * Lock-file keys production code can load: the root's dependencies and, transitively, theirs,
 * optional ones and required peers, resolved the way Node does (nearest node_modules upwards).
 */
function productionPackages(lock) {
  const { packages } = lock;
  const resolve = (from, name) => {
    for (let base = from; ; ) {
      const key = `${base ? `${base}/` : ''}node_modules/${name}`;
      if (packages[key]) return key;
      if (!base) return undefined;
      const cut = base.lastIndexOf('/node_modules/');
      base = cut === -1 ? '' : base.slice(0, cut);
    }
  };
  const reachable = new Set();
  const queue = [''];
  while (queue.length) {
    const key = queue.pop();
    const meta = packages[key];
    const optionalPeers = meta.peerDependenciesMeta ?? {};
    const names = [
      ...Object.keys(meta.dependencies ?? {}),
      ...Object.keys(meta.optionalDependencies ?? {}),
      ...Object.keys(meta.peerDependencies ?? {}).filter((name) => !optionalPeers[name]?.optional),
    ];
    for (const name of names) {
      const target = resolve(key, name);
      if (target && !reachable.has(target)) {
        reachable.add(target);
        queue.push(target);
      }
    }
  }
  return reachable;
}
