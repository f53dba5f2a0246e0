import { isSpecialPurpose } from '../apps/api/src/webhooks/address-guard';
import { K8sObject } from './deploy/manifests';
import { allows, Endpoint, NetworkPolicy } from './deploy/network-policy';
import { Overlay } from './deploy/overlay';

/**
 * The webhooks component of docker/kubernetes (prod with `components/webhooks`) against the webhooks
 * code: the API's egress is exactly what its own address guard lets a callback reach. With the rest
 * of the manifests in test/kubernetes.e2e-spec.ts; here because it goes with apps/api/src/webhooks.
 */
describe('prod-webhooks: signed callbacks, from the API only, to public HTTPS receivers only', () => {
  const overlay = new Overlay('prod-webhooks', 'test/fixtures/kubernetes/prod-webhooks');
  const policies = () => overlay.ofKind<NetworkPolicy & K8sObject>('NetworkPolicy');

  it('gives the API its allowed hosts from config and its signing secret from a Secret key; the workers neither', () => {
    const webhooks = overlay.config(overlay.api).webhooks;
    expect(webhooks).toBeDefined();
    expect(webhooks!.schemes).toEqual(['https:']);
    expect(webhooks!.allowedHosts.length).toBeGreaterThan(0);
    const env = overlay.api.spec.template.spec.containers[0].env ?? [];
    expect(env.find((e) => e.name === 'WEBHOOK_SECRET')?.valueFrom?.secretKeyRef).toBeDefined();
    expect(env.find((e) => e.name === 'WEBHOOK_ALLOWED_HOSTS')?.valueFrom?.configMapKeyRef).toBeDefined();
    for (const worker of overlay.apps('worker')) {
      expect(Object.keys(overlay.env(worker)).filter((n) => n.startsWith('WEBHOOK_'))).toEqual([]);
    }
  });

  it("lets the API reach exactly the addresses its own guard lets a callback reach, on 443 (IPv4 and IPv6)", () => {
    const api = { pod: overlay.pod(overlay.api), namespaceLabels: {} };
    const worker = { pod: overlay.pod(overlay.apps('worker')[0]), namespaceLabels: {} };
    const addresses = [
      ...['93.184.215.14', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:81a::200e'], // public
      ...['10.0.0.1', '10.96.0.10', '172.16.0.1', '172.31.255.254', '192.168.1.1', '100.64.0.1', '127.0.0.1', '169.254.169.254', '0.0.0.0'],
      ...['192.0.2.1', '198.18.0.1', '224.0.0.1', '255.255.255.255', '::1', 'fd00::1', 'fe80::1', 'fd00:ec2::254', '64:ff9b::a00:1', 'ff02::1'],
      ...['::ffff:10.0.0.1', '::a00:1', '::ffff:169.254.169.254', '::ffff:93.184.215.14'], // IPv4-mapped and -compatible

    ];
    const to = (ip: string): Endpoint => ({ outside: true, ip });
    const actual = addresses.map((ip) => [ip, allows(policies(), api, to(ip), 443)]);
    expect(actual).toEqual(addresses.map((ip) => [ip, !isSpecialPurpose(ip)]));
    expect(actual.filter(([, allowed]) => allowed).length).toBe(4);
    expect(allows(policies(), api, to('93.184.215.14'), 80)).toBe(false);
    expect(allows(policies(), worker, to('93.184.215.14'), 443)).toBe(false);
  });
});
