import type { RedisTarget } from '@app/config';
import type { Workload } from './manifests';
import type { Overlay, ScaledObject, TriggerAuthentication } from './overlay';

/**
 * Where and how a KEDA redis trigger connects, resolved as KEDA (>= 2.16) resolves it, so a test can
 * compare it with where and how the apps connect. From KEDA's source: pkg/scalers/redis_scaler.go
 * (the parameters and the order each is looked up in), pkg/scalers/scalersconfig/typed_config.go
 * (`<name>FromEnv` names a variable of the scaled workload's container; lists are comma-separated)
 * and pkg/scaling/resolver/scale_resolvers.go (a TriggerAuthentication's `env` reads the scaled
 * workload's first container; a Secret key that is not there reads as empty).
 */
export interface KedaRedisConnection {
  type: string;
  addresses: string[];
  username: string;
  password: string;
  sentinelMaster: string;
  sentinelUsername: string;
  sentinelPassword: string;
  databaseIndex: number;
  tls: boolean;
}

type Source = 'metadata' | 'auth' | 'env';

// redisConnectionInfo's tags: name(s) and order. Hosts and ports (an alternative to addresses) are
// not resolved here: a trigger using them fails the test.
const PARAMETERS: Record<Exclude<keyof KedaRedisConnection, 'type' | 'databaseIndex' | 'tls'>, { names: string[]; order: Source[] }> = {
  addresses: { names: ['address', 'addresses'], order: ['metadata', 'auth', 'env'] },
  username: { names: ['username'], order: ['metadata', 'env', 'auth'] },
  password: { names: ['password'], order: ['metadata', 'env', 'auth'] },
  sentinelUsername: { names: ['sentinelUsername'], order: ['metadata', 'auth', 'env'] },
  sentinelPassword: { names: ['sentinelPassword'], order: ['metadata', 'auth', 'env'] },
  sentinelMaster: { names: ['sentinelMaster'], order: ['metadata', 'auth', 'env'] },
};

/** The metadata keys of a redis trigger that say where and how to connect (the rest say what to count). */
export const CONNECTION_METADATA = new Set([
  ...Object.values(PARAMETERS).flatMap((p) => p.names.flatMap((n) => [n, `${n}FromEnv`])),
  'enableTLS',
  'unsafeSsl',
  'databaseIndex',
]);

/** KEDA's scaler type for each Redis topology the apps support. */
export const REDIS_TRIGGER_TYPE: Record<RedisTarget['kind'], string> = { standalone: 'redis', sentinel: 'redis-sentinel', cluster: 'redis-cluster' };

/** The connection a redis trigger of `scaled` resolves to. */
export function kedaRedisConnection(overlay: Overlay, scaled: ScaledObject, trigger: ScaledObject['spec']['triggers'][number]): KedaRedisConnection {
  const where = `${scaled.metadata.name}/${trigger.name}`;
  const target = overlay.ofKind<Workload>('Deployment').find((d) => d.metadata.name === scaled.spec.scaleTargetRef.name);
  if (!target) throw new Error(`${where}: no Deployment ${scaled.spec.scaleTargetRef.name}`);
  const env = overlay.env(target);
  const metadata = trigger.metadata;
  if (metadata.host ?? metadata.hosts ?? metadata.port ?? metadata.ports) throw new Error(`${where}: hosts and ports are not resolved by test/deploy/keda.ts`);

  const auth: Record<string, string> = {};
  if (trigger.authenticationRef) {
    const ref = trigger.authenticationRef;
    if ((ref.kind ?? 'TriggerAuthentication') !== 'TriggerAuthentication') throw new Error(`${where}: only a TriggerAuthentication is resolved here`);
    const spec = overlay.ofKind<TriggerAuthentication>('TriggerAuthentication').find((a) => a.metadata.name === ref.name)?.spec;
    if (!spec) throw new Error(`${where}: no TriggerAuthentication ${ref.name}`);
    const unknown = Object.keys(spec).filter((k) => k !== 'env' && k !== 'secretTargetRef');
    if (unknown.length) throw new Error(`${where}: TriggerAuthentication ${unknown.join(', ')} not resolved by test/deploy/keda.ts`);
    for (const e of spec.env ?? []) {
      if (e.containerName) throw new Error(`${where}: containerName is not resolved by test/deploy/keda.ts`);
      auth[e.parameter] = env[e.name] ?? '';
    }
    for (const s of spec.secretTargetRef ?? []) {
      const values = overlay.secret(s.name);
      // KEDA reads a missing Secret as empty too, but that is a deployment mistake.
      if (!values) throw new Error(`${where}: Secret ${s.name} is neither rendered nor in a secret.example.yaml`);
      auth[s.parameter] = values[s.key] ?? '';
    }
  }

  const lookup = ({ names, order }: { names: string[]; order: Source[] }): string => {
    for (const source of order) {
      for (const name of names) {
        const value = source === 'metadata' ? metadata[name] : source === 'auth' ? auth[name] : env[metadata[`${name}FromEnv`] ?? ''];
        if (value?.trim()) return value.trim();
      }
    }
    return '';
  };
  const value = Object.fromEntries(Object.entries(PARAMETERS).map(([field, p]) => [field, lookup(p)])) as Record<keyof typeof PARAMETERS, string>;

  // SetEnableTLS: `enableTLS` in the metadata (a Go bool) or `tls` of the TriggerAuthentication (enable or disable), not both.
  if (metadata.enableTLS !== undefined && auth.tls) throw new Error(`${where}: TLS set in both the trigger and the TriggerAuthentication (KEDA refuses that)`);
  const tls = metadata.enableTLS !== undefined ? goBool(metadata.enableTLS, where) : auth.tls ? enableOrDisable(auth.tls, where) : false;

  return {
    type: trigger.type,
    ...value,
    addresses: value.addresses.split(',').map((a) => a.trim()).filter(Boolean),
    databaseIndex: Number(metadata.databaseIndex ?? 0),
    tls,
  };
}

/**
 * What KEDA must resolve to reach the Redis the apps of `namespace` reach, as they log in to it.
 * why qualified: KEDA runs in its own namespace, where a Service's short name means nothing.
 */
export function expectedConnection(target: RedisTarget, namespace: string): KedaRedisConnection {
  const qualified = (host: string) => (/^[a-z0-9-]+$/.test(host) ? `${host}.${namespace}.svc` : host);
  const hostPort = (h: { host: string; port: number }) => (h.host.includes(':') ? `[${h.host}]:${h.port}` : `${qualified(h.host)}:${h.port}`);
  const none = { sentinelMaster: '', sentinelUsername: '', sentinelPassword: '', databaseIndex: 0 };
  const credentials = { username: target.username ?? '', password: target.password ?? '' };
  switch (target.kind) {
    case 'standalone': {
      const url = new URL(target.url);
      return {
        type: REDIS_TRIGGER_TYPE.standalone,
        ...none,
        addresses: [hostPort({ host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 6379) })],
        // Credentials in the URL win over REDIS_USERNAME/REDIS_PASSWORD (libs/config/src/redis-target.ts).
        username: decodeURIComponent(url.username) || credentials.username,
        password: decodeURIComponent(url.password) || credentials.password,
        databaseIndex: Number(url.pathname.slice(1) || 0),
        tls: target.tls,
      };
    }
    case 'sentinel':
      // The apps log in to the Sentinels with the same credentials as to Redis (libs/redis).
      return {
        type: REDIS_TRIGGER_TYPE.sentinel,
        ...none,
        ...credentials,
        addresses: target.sentinels.map(hostPort),
        sentinelMaster: target.name,
        sentinelUsername: credentials.username,
        sentinelPassword: credentials.password,
        tls: target.tls,
      };
    case 'cluster':
      return { type: REDIS_TRIGGER_TYPE.cluster, ...none, ...credentials, addresses: target.nodes.map(hostPort), tls: target.tls };
  }
}

function goBool(text: string, where: string): boolean {
  // Go's strconv.ParseBool.
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  throw new Error(`${where}: enableTLS ${JSON.stringify(text)} is not a boolean to KEDA`);
}

function enableOrDisable(text: string, where: string): boolean {
  if (text === 'enable' || text === 'disable') return text === 'enable';
  throw new Error(`${where}: tls ${JSON.stringify(text)} must be enable or disable`);
}
