import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import calculateSlot from 'cluster-key-slot';
import IORedis, { type RedisOptions } from 'ioredis';
import type { TlsFiles } from './test-ca';
import { freePort, waitFor } from './wait';

const exec = promisify(execFile);

class StartFailed extends Error {}
const started = new Set<ChildProcess>();

// A test that dies half-way must not leave redis-servers running.
process.once('exit', () => {
  for (const proc of started) proc.kill('SIGKILL');
});

/** One redis-server (data node or Sentinel) of a test's own, on a free port in a temp directory. */
export class RedisNode {
  private proc?: ChildProcess;

  constructor(
    readonly port: number,
    readonly dir: string,
    private readonly args: string[],
    private readonly password: string,
    /** How the test's own connections reach it besides the password (TLS, a user name). */
    private readonly connect: RedisOptions = {},
  ) {}

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Starts the process (again, on the same port and directory) and waits until it answers PING. */
  async start(): Promise<void> {
    const proc = spawn('redis-server', this.args, { cwd: this.dir, stdio: 'ignore' });
    started.add(proc);
    proc.once('exit', () => started.delete(proc));
    this.proc = proc;
    let exited = false;
    proc.once('exit', () => (exited = true));
    await waitFor(
      async () => {
        // A node that could not start (a port taken after all, a bad setting) says why in its log.
        if (exited) throw new StartFailed(`redis-server on ${this.port} exited at start (${proc.exitCode ?? proc.signalCode}); its log:\n${this.logTail()}`);
        return (await this.client((c) => c.ping())) === 'PONG';
      },
      { timeoutMs: 10_000, what: () => `redis-server on ${this.port}; its log:\n${this.logTail()}`, failOn: StartFailed },
    );
  }

  /** Sends `signal` and waits for the process to exit (SIGKILL: the node dies as in a crash). */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill(signal);
    await exited;
  }

  /** The last `lines` lines of this node's log (what Redis said when a test stalled on it). */
  logTail(lines = 15): string {
    for (const name of ['redis.log', 'sentinel.log']) {
      try {
        return readFileSync(join(this.dir, name), 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
      } catch {
        // not this kind of node
      }
    }
    return '(no log)';
  }

  /** Runs `fn` on a short-lived connection to this node. */
  async client<T>(fn: (redis: IORedis) => Promise<T>): Promise<T> {
    const redis = new IORedis({
      port: this.port,
      host: '127.0.0.1',
      password: this.password,
      lazyConnect: true,
      connectTimeout: 1000,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      ...this.connect,
    });
    redis.on('error', () => undefined);
    try {
      await redis.connect();
      return await fn(redis);
    } finally {
      redis.disconnect();
    }
  }
}

export async function newNode(kind: string, password: string, args: (port: number, dir: string) => string[], connect: RedisOptions = {}): Promise<RedisNode> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `nest-offload-${kind}-`));
  return new RedisNode(port, dir, args(port, dir), password, connect);
}

/** TLS and ACL users for the nodes of a set (all optional: without, plain TCP and the password only). */
export interface NodeSecurity {
  /** Every node serves TLS only, with this certificate; replicas and Sentinels reach the others over TLS too. */
  tls?: TlsFiles;
  /** ACL users of the data nodes besides `default`, each a `user` directive without the keyword. */
  users?: string[];
  /** ACL users of the Sentinels, likewise. */
  sentinelUsers?: string[];
}

/** redis-server settings that make `port` a TLS-only port with `tls`'s certificate (as name, value pairs). */
export function tlsSettings(port: number, tls: TlsFiles): Array<[string, string]> {
  return [
    ['port', '0'],
    ['tls-port', String(port)],
    ['tls-cert-file', tls.cert],
    ['tls-key-file', tls.key],
    ['tls-ca-cert-file', tls.ca],
    // why: clients show no certificate of their own (managed Redis asks for a password, not one).
    ['tls-auth-clients', 'no'],
    ['tls-replication', 'yes'],
  ];
}

/** How a test's own connection reaches nodes with `tls`. */
export const tlsConnect = (tls?: TlsFiles): RedisOptions => (tls ? { tls: { ca: readFileSync(tls.ca) } } : {});

const dataArgs = (port: number, password: string, { tls, users = [] }: NodeSecurity = {}) => [
  ...(tls ? tlsSettings(port, tls).flatMap(([name, value]) => [`--${name}`, value]) : ['--port', String(port)]),
  ...users.flatMap((user) => ['--user', ...user.split(/\s+/)]),
  '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--logfile', 'redis.log',
  '--requirepass', password, '--masterauth', password, '--maxmemory-policy', 'noeviction',
  // why: Redis 7 waits 5 s before a diskless full sync, to batch replicas; a replica that has never
  // synced will not take over, so the sets are only ready once every replica has its first copy.
  '--repl-diskless-sync-delay', '0',
];

const linkedUp = async (replica: RedisNode) => (await replica.client((c) => c.info('replication'))).includes('master_link_status:up');

/** Stops every node of a set and removes their directories, whatever state the set is in. */
async function stopAll(nodes: RedisNode[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.kill('SIGKILL')));
  for (const n of nodes) rmSync(n.dir, { recursive: true, force: true });
}

/**
 * A Sentinel-managed Redis: a primary, two replicas and three Sentinels (quorum 2), all with the
 * same password, as the Bitnami chart sets them up. A killed primary is replaced in about 2-3 s.
 * With `security`, every node serves TLS only and has the ACL users given besides `default`.
 */
export class SentinelSet {
  readonly name = 'nest-offload';

  private constructor(
    readonly password: string,
    readonly data: RedisNode[],
    readonly sentinels: RedisNode[],
  ) {}

  static async start({ password = 'ha-test-password', downAfterMs = 1000, ...security }: { password?: string; downAfterMs?: number } & NodeSecurity = {}): Promise<SentinelSet> {
    const nodes: RedisNode[] = [];
    const connect = tlsConnect(security.tls);
    try {
      const primary = await newNode('primary', password, (port) => dataArgs(port, password, security), connect);
      nodes.push(primary);
      await primary.start();
      const replicas = await Promise.all(
        [0, 1].map(() =>
          newNode('replica', password, (port) => [...dataArgs(port, password, security), '--replicaof', '127.0.0.1', String(primary.port)], connect),
        ),
      );
      nodes.push(...replicas);
      await Promise.all(replicas.map((r) => r.start()));
      await waitFor(async () => (await Promise.all(replicas.map(linkedUp))).every(Boolean), { what: 'two replicas in sync' });
      const sentinels: RedisNode[] = [];
      for (let i = 0; i < 3; i++) {
        const sentinel = await newNode('sentinel', password, (port, dir) => {
          const conf = join(dir, 'sentinel.conf');
          writeFileSync(
            conf,
            [
              ...(security.tls ? tlsSettings(port, security.tls).map((setting) => setting.join(' ')) : [`port ${port}`]),
              ...(security.sentinelUsers ?? []).map((user) => `user ${user}`),
              'bind 127.0.0.1',
              `dir ${dir}`,
              'logfile sentinel.log',
              `requirepass ${password}`,
              `sentinel monitor nest-offload 127.0.0.1 ${primary.port} 2`,
              `sentinel auth-pass nest-offload ${password}`,
              `sentinel down-after-milliseconds nest-offload ${downAfterMs}`,
              'sentinel failover-timeout nest-offload 10000',
              'sentinel parallel-syncs nest-offload 2',
              '',
            ].join('\n'),
          );
          return [conf, '--sentinel'];
        }, connect);
        sentinels.push(sentinel);
        nodes.push(sentinel);
      }
      await Promise.all(sentinels.map((s) => s.start()));
      const set = new SentinelSet(password, [primary, ...replicas], sentinels);
      // Every Sentinel knows the others and both replicas, so any quorum can fail over.
      await waitFor(
        async () => {
          const views = await Promise.all(
            sentinels.map((s) => s.client(async (c) => [await c.call('SENTINEL', 'SENTINELS', set.name), await c.call('SENTINEL', 'REPLICAS', set.name)])),
          );
          return views.every(([others, replicas]) => (others as unknown[]).length === 2 && (replicas as unknown[]).length === 2);
        },
        { timeoutMs: 20_000, intervalMs: 200, what: 'Sentinels discovering each other and the replicas' },
      );
      return set;
    } catch (error) {
      await stopAll(nodes);
      throw error;
    }
  }

  /** `REDIS_SENTINELS` for this set. */
  get sentinelsEnv(): string {
    return this.sentinels.map((s) => s.address).join(',');
  }

  /** The data node the Sentinels currently name as primary. */
  async primary(): Promise<RedisNode> {
    const [, port] = (await this.sentinels[0].client((c) => c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name))) as [string, string];
    return this.data.find((n) => n.port === Number(port))!;
  }

  /**
   * Waits until the failover of `old` has settled, and returns the new primary: every Sentinel names
   * the same node, other than `old`, at the same config epoch and with no failover in progress; that
   * node is a primary; every other live data node replicates from it in sync
   * (`master_link_status:up`); and all of that holds on two looks 500 ms apart.
   *
   * why all of it, not the first node a quorum names: under load a Sentinel that has not yet heard
   * of a failover can start one of its own at a higher epoch, which wins, and a second replica is
   * promoted a second or two later (seen here: 40849 → 35865 at epoch 1, then → 46511 at epoch 2).
   * A test that took the first one for the primary waited for replicas to link to a node that was
   * a replica again. And until the surviving replica is in sync, an API with REDIS_MIN_REPLICAS_ACK
   * rightly answers 503 NOT_REPLICATED: probes sent before that test Redis's resync, not the apps.
   */
  async failedOver(old: RedisNode, timeoutMs = 45_000): Promise<RedisNode> {
    let last = '';
    const look = async (): Promise<RedisNode | undefined> => {
      const masters = await Promise.all(
        this.sentinels.map((s) => s.client((c) => c.call('SENTINEL', 'MASTER', this.name) as Promise<string[]>).catch(() => undefined)),
      );
      const fields = masters.map((m) => (m ? Object.fromEntries(m.flatMap((v, i) => (i % 2 === 0 ? [[v, m[i + 1]]] : []))) : undefined));
      last = JSON.stringify(fields.map((f) => f && { port: f.port, epoch: f['config-epoch'], flags: f.flags }));
      const ports = new Set(fields.map((f) => f?.port));
      const epochs = new Set(fields.map((f) => f?.['config-epoch']));
      if (ports.size !== 1 || epochs.size !== 1 || fields.some((f) => !f || f.flags !== 'master')) return undefined;
      const node = this.data.find((n) => n.port === Number(fields[0]!.port));
      if (!node || node === old) return undefined;
      if (!(await node.client((c) => c.info('replication'))).includes('role:master')) return undefined;
      const others = this.data.filter((n) => n !== node && n !== old && n.running);
      const infos = await Promise.all(others.map((n) => n.client((c) => c.info('replication')).catch(() => '')));
      return infos.every((info) => info.includes(`master_port:${node.port}`) && info.includes('master_link_status:up')) ? node : undefined;
    };
    return waitFor(
      async () => {
        const first = await look();
        if (!first) return undefined;
        await new Promise((resolve) => setTimeout(resolve, 500));
        return (await look()) === first ? first : undefined;
      },
      { timeoutMs, intervalMs: 100, what: () => `a settled Sentinel failover (the Sentinels' view: ${last})` },
    ).catch((error: Error) => {
      const logs = [...this.data.filter((n) => n !== old), this.sentinels[0]].map((n) => `${n.address}:\n${n.logTail()}`).join('\n');
      throw new Error(`${error.message}\n${logs}`);
    });
  }

  /**
   * Cuts the replicas of `primary` off its replication stream, as a partition between them would, and
   * returns how to undo it: each replica drops its link and, with a wrong `masterauth`, cannot link
   * again. They keep answering the Sentinels (so one is still promoted), but from here on writes
   * exist on the primary only. why not SIGSTOP: a stopped replica still receives into its socket
   * buffer and applies that after SIGCONT, even once the primary is dead; only what overflows the
   * buffer would be lost, an amount that varies with the load.
   */
  async cutReplicas(primary: RedisNode): Promise<{ reconnect(): Promise<void> }> {
    const replicas = this.data.filter((n) => n !== primary);
    const cut = (replica: RedisNode) =>
      replica.client(async (c) => {
        await c.config('SET', 'masterauth', `not-${this.password}`);
        await c.call('CLIENT', 'KILL', 'TYPE', 'master');
      });
    await Promise.all(replicas.map(cut));
    return {
      reconnect: async () => {
        await Promise.all(replicas.map((r) => r.client((c) => c.config('SET', 'masterauth', this.password))));
      },
    };
  }

  /** How many bytes of `primary`'s replication stream even the replica furthest along (the one Sentinel promotes) lacks. */
  async replicationLag(primary: RedisNode): Promise<number> {
    const offset = async (node: RedisNode, field: string) => Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(await node.client((c) => c.info('replication')))?.[1]);
    const replicas = this.data.filter((n) => n !== primary);
    const [written, ...copied] = await Promise.all([offset(primary, 'master_repl_offset'), ...replicas.map((r) => offset(r, 'slave_repl_offset'))]);
    return written - Math.max(...copied);
  }

  async stop(): Promise<void> {
    await stopAll([...this.sentinels, ...this.data]);
  }
}

/**
 * A Redis Cluster of three primaries with one replica each, created with `redis-cli --cluster create
 * --cluster-replicas 1`. A killed primary is replaced by its replica after cluster-node-timeout and an
 * election (about 3 s here).
 */
export class RedisClusterSet {
  private constructor(
    readonly password: string,
    readonly nodes: RedisNode[],
  ) {}

  static async start({ password = 'ha-test-password', nodeTimeoutMs = 2000 } = {}): Promise<RedisClusterSet> {
    const nodes: RedisNode[] = [];
    try {
      for (let i = 0; i < 6; i++) {
        // why: the bus port defaults to port + 10000, which nobody checked was free (a client
        // socket's local port, another suite's server); a second free port of its own is.
        const busPort = await freePort();
        nodes.push(
          await newNode('cluster', password, (port) => [
            ...dataArgs(port, password),
            '--cluster-enabled', 'yes', '--cluster-port', String(busPort), '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(nodeTimeoutMs),
          ]),
        );
      }
      await Promise.all(nodes.map((n) => n.start()));
      await exec('redis-cli', ['--no-auth-warning', '-a', password, '--cluster', 'create', ...nodes.map((n) => n.address), '--cluster-replicas', '1', '--cluster-yes'], {
        timeout: 30_000,
      });
      const set = new RedisClusterSet(password, nodes);
      await set.settled();
      return set;
    } catch (error) {
      await stopAll(nodes);
      throw error;
    }
  }

  /** `REDIS_CLUSTER_NODES` for this cluster: every node as a seed. */
  get seedsEnv(): string {
    return this.nodes.map((n) => n.address).join(',');
  }

  /** Waits until every running node sees the cluster as ok, with three primaries that each have a replica. */
  async settled(timeoutMs = 30_000): Promise<void> {
    await waitFor(
      async () => {
        const running = this.nodes.filter((n) => n.running);
        const infos = await Promise.all(running.map((n) => n.client((c) => c.call('CLUSTER', 'INFO') as Promise<string>)));
        if (!infos.every((i) => i.includes('cluster_state:ok'))) return false;
        const primaries = await this.primaries();
        if (primaries.length !== 3 || !primaries.every((p) => p.replicas === 1)) return false;
        const roles = await Promise.all(running.map((n) => n.client((c) => c.info('replication'))));
        return running.every((n, i) => roles[i].includes('role:master') || roles[i].includes('master_link_status:up'));
      },
      { timeoutMs, intervalMs: 200, what: 'a settled cluster (3 primaries, 1 replica each)' },
    );
  }

  /** The primaries as a running node sees them, with their slot ranges and replica counts. */
  async primaries(): Promise<Array<{ node: RedisNode; slots: Array<[number, number]>; replicas: number }>> {
    const viewer = this.nodes.find((n) => n.running)!;
    const text = (await viewer.client((c) => c.call('CLUSTER', 'NODES'))) as string;
    const lines = text.trim().split('\n').map((l) => l.split(' '));
    return lines
      .filter((f) => f[2].includes('master') && !f[2].includes('fail'))
      .map((f) => ({
        node: this.nodes.find((n) => f[1].startsWith(`${n.address}@`))!,
        slots: f.slice(8).filter((s) => /^\d/.test(s)).map((s) => s.split('-').map(Number) as [number, number]).map(([a, b]) => [a, b ?? a] as [number, number]),
        replicas: lines.filter((g) => g[3] === f[0] && !g[2].includes('fail')).length,
      }));
  }

  /**
   * Moves the (empty) hash slot of `key` to the primary `to`, the way `redis-cli --cluster reshard`
   * does: IMPORTING on the target, MIGRATING on the source, then NODE on the target (which bumps its
   * config epoch, so its claim wins), the source and the other primaries.
   */
  async moveSlot(key: string, to: RedisNode): Promise<void> {
    const slot = String(calculateSlot(key));
    const from = await this.primaryFor(key);
    const idOf = async (n: RedisNode) => (await n.client((c) => c.call('CLUSTER', 'MYID'))) as string;
    const [fromId, toId] = await Promise.all([idOf(from), idOf(to)]);
    await to.client((c) => c.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', fromId));
    await from.client((c) => c.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', toId));
    await to.client((c) => c.call('CLUSTER', 'SETSLOT', slot, 'NODE', toId));
    await from.client((c) => c.call('CLUSTER', 'SETSLOT', slot, 'NODE', toId));
    for (const { node } of await this.primaries()) {
      if (node !== to && node !== from) await node.client((c) => c.call('CLUSTER', 'SETSLOT', slot, 'NODE', toId));
    }
    await waitFor(async () => (await this.primaryFor(key)) === to, { what: `slot ${slot} on ${to.address}` });
    await this.settled();
  }

  /** The replica of `primary`. */
  async replicaOf(primary: RedisNode): Promise<RedisNode> {
    const id = (await primary.client((c) => c.call('CLUSTER', 'MYID'))) as string;
    const text = (await primary.client((c) => c.call('CLUSTER', 'NODES'))) as string;
    const line = text.split('\n').map((l) => l.split(' ')).find((f) => f[3] === id);
    const node = line && this.nodes.find((n) => line[1].startsWith(`${n.address}@`));
    if (!node) throw new Error(`no replica of ${primary.address}`);
    return node;
  }

  /** The primary serving `key`'s hash slot now. */
  async primaryFor(key: string): Promise<RedisNode> {
    const slot = calculateSlot(key);
    const owner = (await this.primaries()).find((p) => p.slots.some(([a, b]) => slot >= a && slot <= b));
    if (!owner) throw new Error(`no primary serves slot ${slot}`);
    return owner.node;
  }

  /** Waits until a node other than `old` serves `key`'s slot as primary and the cluster is ok again. */
  async failedOver(key: string, old: RedisNode, timeoutMs = 30_000): Promise<RedisNode> {
    return waitFor(
      async () => {
        const node = await this.primaryFor(key).catch(() => undefined);
        if (!node || node === old) return undefined;
        const info = (await node.client((c) => c.call('CLUSTER', 'INFO'))) as string;
        return info.includes('cluster_state:ok') ? node : undefined;
      },
      { timeoutMs, intervalMs: 100, what: 'cluster failover' },
    );
  }

  async stop(): Promise<void> {
    await stopAll(this.nodes);
  }
}
