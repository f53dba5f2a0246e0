import { AdminSessions, cookieValue, SESSION_TTL_SECONDS } from './admin-session';

describe('AdminSessions', () => {
  const keys = [
    { name: 'ops', key: 'o'.repeat(32) },
    { name: 'ci', key: 'c'.repeat(32) },
  ];
  let now = 1_800_000_000_000;
  const sessions = new AdminSessions(keys, () => now);

  it('verifies the cookies it issued, naming the key', () => {
    expect(sessions.verify(sessions.issue('ops'))).toBe('ops');
    expect(sessions.verify(sessions.issue('ci'))).toBe('ci');
  });

  it('refuses forged, altered, malformed and expired cookies', () => {
    const cookie = sessions.issue('ops');
    const [name, expires, mac] = cookie.split('.');
    expect(sessions.verify(`${Buffer.from('ci').toString('base64url')}.${expires}.${mac}`)).toBeUndefined();
    expect(sessions.verify(`${name}.${Number(expires) + 3600}.${mac}`)).toBeUndefined();
    expect(sessions.verify(`${name}.${expires}.${mac.slice(0, -2)}AA`)).toBeUndefined();
    expect(sessions.verify(`${name}.${expires}`)).toBeUndefined();
    expect(sessions.verify(undefined)).toBeUndefined();
    expect(sessions.verify('')).toBeUndefined();
    now += SESSION_TTL_SECONDS * 1000;
    expect(sessions.verify(cookie)).toBeUndefined();
  });

  it('ends the sessions of a key that is rotated or removed', () => {
    const cookie = sessions.issue('ops');
    expect(new AdminSessions([{ name: 'ops', key: 'n'.repeat(32) }], () => now).verify(cookie)).toBeUndefined();
    expect(new AdminSessions([keys[1]], () => now).verify(cookie)).toBeUndefined();
    expect(new AdminSessions(keys, () => now).verify(cookie)).toBe('ops');
  });

  it('reads one cookie from a Cookie header', () => {
    expect(cookieValue('a=1; nest_offload_admin=x.y.z; b=2', 'nest_offload_admin')).toBe('x.y.z');
    expect(cookieValue('nest_offload_admin_other=1', 'nest_offload_admin')).toBeUndefined();
    expect(cookieValue(undefined, 'nest_offload_admin')).toBeUndefined();
  });
});
