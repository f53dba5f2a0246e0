import type { RedisClient } from '@app/redis';
import type { RoleKey } from '../security/api-keys';
import { AdminSessions, cookieValue, SESSION_TTL_SECONDS, SESSIONS_PER_KEY, sessionCookie, tokenDigest } from './admin-session';

/** The commands the sessions use, on Maps, with EX honoured against `now` (sorted sets never expire here). */
function fakeRedis(now: () => number) {
  const data = new Map<string, { value: string; until: number }>();
  const sets = new Map<string, Map<string, number>>();
  const set = (key: string) => sets.get(key) ?? sets.set(key, new Map()).get(key)!;
  const redis = {
    zadd: async (key: string, score: number, member: string) => void set(key).set(member, score),
    zremrangebyscore: async (key: string, _min: '-inf', max: number) => {
      for (const [member, score] of set(key)) if (score <= max) set(key).delete(member);
    },
    zrange: async (key: string, start: number, stop: number) => {
      const members = [...set(key)].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1)).map(([member]) => member);
      return members.slice(start, stop < 0 ? Math.max(0, members.length + stop + 1) : stop + 1);
    },
    zrem: async (key: string, ...members: string[]) => members.forEach((member) => set(key).delete(member)),
    expire: async () => 1,
    set: async (key: string, value: string, _ex: 'EX', seconds: number) => void data.set(key, { value, until: now() + seconds * 1000 }),
    get: async (key: string) => {
      const entry = data.get(key);
      return entry && entry.until > now() ? entry.value : null;
    },
    del: async (key: string) => Number(data.delete(key)),
  };
  return { redis: redis as unknown as RedisClient, data };
}

describe('AdminSessions', () => {
  const keys: RoleKey[] = [
    { name: 'ops', key: 'o'.repeat(32), role: 'admin' },
    { name: 'web', key: 'w'.repeat(32), role: 'client' },
  ];
  let now = 1_800_000_000_000;
  const clock = () => now;
  const { redis, data } = fakeRedis(clock);
  const keyOf = (digest: string) => `test:admin-session:${digest}`;
  const sessionsOf = (holder: string) => `test:admin-sessions:${holder}`;
  const sessions = new AdminSessions(redis, keyOf, sessionsOf, keys, clock);

  it('finds the sessions it opened, with their key name and role; Redis keeps only the token\'s hash', async () => {
    const admin = await sessions.open({ name: 'ops', role: 'admin' });
    const client = await sessions.open({ name: 'web', role: 'client' });
    expect(admin).toMatch(/^[\w-]{43}$/);
    expect(await sessions.find(admin)).toEqual({ name: 'ops', role: 'admin' });
    expect(await sessions.find(client)).toEqual({ name: 'web', role: 'client' });
    expect([...data.keys()]).toEqual(expect.arrayContaining([keyOf(tokenDigest(admin)), keyOf(tokenDigest(client))]));
    const stored = JSON.stringify([...data.entries()]);
    expect(stored).not.toContain(admin);
    expect(stored).not.toContain('o'.repeat(16));
  });

  it('refuses unknown, malformed and closed tokens; closing one leaves the others', async () => {
    const one = await sessions.open({ name: 'ops', role: 'admin' });
    const two = await sessions.open({ name: 'ops', role: 'admin' });
    expect(await sessions.find(undefined)).toBeUndefined();
    expect(await sessions.find('')).toBeUndefined();
    expect(await sessions.find('A'.repeat(43))).toBeUndefined();
    expect(await sessions.find(`${one}.x`)).toBeUndefined();
    await sessions.close(one);
    expect(await sessions.find(one)).toBeUndefined();
    expect(await sessions.find(two)).toEqual({ name: 'ops', role: 'admin' });
  });

  it('ends after SESSION_TTL_SECONDS', async () => {
    const token = await sessions.open({ name: 'ops', role: 'admin' });
    now += SESSION_TTL_SECONDS * 1000 - 1000;
    expect(await sessions.find(token)).toBeDefined();
    now += 1000;
    expect(await sessions.find(token)).toBeUndefined();
  });

  it('ends the sessions of a key that is rotated, removed, or moved to the other list', async () => {
    const token = await sessions.open({ name: 'ops', role: 'admin' });
    const stored = data.get(keyOf(tokenDigest(token)))!.value;
    expect(new AdminSessions(redis, keyOf, sessionsOf, [{ name: 'ops', key: 'n'.repeat(32), role: 'admin' }], clock).holderOf(stored)).toBeUndefined();
    expect(new AdminSessions(redis, keyOf, sessionsOf, [keys[1]], clock).holderOf(stored)).toBeUndefined();
    expect(new AdminSessions(redis, keyOf, sessionsOf, [{ ...keys[0], role: 'client' }], clock).holderOf(stored)).toBeUndefined();
    expect(new AdminSessions(redis, keyOf, sessionsOf, keys, clock).holderOf(stored)).toEqual({ name: 'ops', role: 'admin' });
    expect(sessions.holderOf('not json')).toBeUndefined();
    expect(sessions.holderOf(JSON.stringify({ ...JSON.parse(stored), role: 'root' }))).toBeUndefined();
  });

  it('keeps at most SESSIONS_PER_KEY sessions of one key: signing in once more ends its oldest', async () => {
    const web = { name: 'web', role: 'client' as const };
    const first = await sessions.open(web);
    now += 1000;
    const later: string[] = [];
    for (let i = 0; i < SESSIONS_PER_KEY; i++) later.push(await sessions.open(web));
    expect(await sessions.find(first)).toBeUndefined();
    for (const token of later) expect(await sessions.find(token)).toEqual(web);
    // Another key's sessions are its own.
    const ops = await sessions.open({ name: 'ops', role: 'admin' });
    expect(await sessions.find(ops)).toEqual({ name: 'ops', role: 'admin' });
    expect(await sessions.find(later[0])).toEqual(web);
  });

  it('names its cookie __Host- and marks it Secure in production only', () => {
    expect(sessionCookie('production').set('t')).toBe(`__Host-nest_offload_admin=t; Path=/; Max-Age=${SESSION_TTL_SECONDS}; HttpOnly; SameSite=Strict; Secure`);
    expect(sessionCookie('production').clear()).toBe('__Host-nest_offload_admin=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure');
    expect(sessionCookie('development').set('t')).toBe(`nest_offload_admin=t; Path=/; Max-Age=${SESSION_TTL_SECONDS}; HttpOnly; SameSite=Strict`);
  });

  it('reads one cookie from a Cookie header', () => {
    expect(cookieValue('a=1; nest_offload_admin=x.y.z; b=2', 'nest_offload_admin')).toBe('x.y.z');
    expect(cookieValue('nest_offload_admin_other=1', 'nest_offload_admin')).toBeUndefined();
    expect(cookieValue(undefined, 'nest_offload_admin')).toBeUndefined();
  });
});
