import { listeningOn } from './listening-on';

describe('listeningOn', () => {
  it('names the address the server was given, every interface included', () => {
    expect(listeningOn({ address: '0.0.0.0', family: 'IPv4', port: 3000 })).toBe('http://0.0.0.0:3000');
    expect(listeningOn({ address: '127.0.0.1', family: 'IPv4', port: 3001 })).toBe('http://127.0.0.1:3001');
    expect(listeningOn({ address: '::', family: 'IPv6', port: 3000 })).toBe('http://[::]:3000');
    expect(listeningOn('/run/api.sock')).toBe('/run/api.sock');
  });
});
