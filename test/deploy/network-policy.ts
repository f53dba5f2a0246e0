import { BlockList, isIP } from 'node:net';

/**
 * What a set of NetworkPolicies allows, as Kubernetes decides it: a pod selected by no policy of a
 * direction allows everything in that direction; a pod selected by some allows only what one of
 * their rules names (peer and port). Enough of the API for docker/kubernetes: matchLabels and
 * matchExpressions, namespaceSelector, podSelector, ipBlock (cidr and except, for an outside
 * address given as an IP; one given without is taken to be in every block), and numbered or named ports.
 */

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

interface Peer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}

interface Rule {
  from?: Peer[];
  to?: Peer[];
  ports?: { port?: number | string; protocol?: string }[];
}

export interface NetworkPolicy {
  metadata: { name: string; namespace?: string };
  spec: { podSelector: LabelSelector; policyTypes?: ('Ingress' | 'Egress')[]; ingress?: Rule[]; egress?: Rule[] };
}

export interface Pod {
  namespace: string;
  labels: Record<string, string>;
  /** Named container ports, for rules that name a port. */
  ports: Record<string, number>;
}

/** A peer: a pod somewhere, or an address outside the cluster (any address, or the one named). */
export type Endpoint = { pod: Pod; namespaceLabels: Record<string, string> } | { outside: true; ip?: string };

export function matches(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return true;
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    switch (operator) {
      case 'In':
        return key in labels && values.includes(labels[key]);
      case 'NotIn':
        return !(key in labels) || !values.includes(labels[key]);
      case 'Exists':
        return key in labels;
      case 'DoesNotExist':
        return !(key in labels);
    }
  });
  return byLabels && byExpressions;
}

function types(policy: NetworkPolicy): string[] {
  // Kubernetes' default: Ingress always, Egress when the policy has egress rules.
  return policy.spec.policyTypes ?? ['Ingress', ...(policy.spec.egress ? ['Egress'] : [])];
}

/** Whether `ip` is in the block's CIDR and in none of its exceptions (of its own address family). */
function inBlock(block: NonNullable<Peer['ipBlock']>, ip: string | undefined): boolean {
  if (ip === undefined) return true;
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
  const list = (cidrs: string[]) => {
    const blocks = new BlockList();
    for (const cidr of cidrs) {
      const [network, prefix] = cidr.split('/');
      if ((isIP(network) === 6 ? 'ipv6' : 'ipv4') === family) blocks.addSubnet(network, Number(prefix), family);
    }
    return blocks;
  };
  return list([block.cidr]).check(ip, family) && !list(block.except ?? []).check(ip, family);
}

function peerMatches(peer: Peer, policyNamespace: string, other: Endpoint): boolean {
  if ('outside' in other) return peer.ipBlock !== undefined && inBlock(peer.ipBlock, other.ip);
  if (peer.ipBlock) return false;
  const namespaceOk = peer.namespaceSelector ? matches(peer.namespaceSelector, other.namespaceLabels) : other.pod.namespace === policyNamespace;
  return namespaceOk && matches(peer.podSelector, other.pod.labels);
}

function portMatches(rule: Rule, port: number, protocol: string, destination: Pod | undefined): boolean {
  if (!rule.ports?.length) return true;
  return rule.ports.some((p) => {
    if ((p.protocol ?? 'TCP') !== protocol) return false;
    if (p.port === undefined) return true;
    const number = typeof p.port === 'number' ? p.port : destination?.ports[p.port];
    return number === port;
  });
}

/** Whether `source` may open a connection to `port` of `destination` (a pod, or an outside address). */
export function allows(
  policies: NetworkPolicy[],
  source: Endpoint,
  destination: Endpoint,
  port: number,
  protocol = 'TCP',
): boolean {
  const side = (direction: 'Ingress' | 'Egress', self: Endpoint, other: Endpoint): boolean => {
    if ('outside' in self) return true; // only pods are subject to policies
    const selecting = policies.filter(
      (p) => (p.metadata.namespace ?? self.pod.namespace) === self.pod.namespace && types(p).includes(direction) && matches(p.spec.podSelector, self.pod.labels),
    );
    if (!selecting.length) return true;
    return selecting.some((policy) =>
      ((direction === 'Ingress' ? policy.spec.ingress : policy.spec.egress) ?? []).some((rule) => {
        const peers = direction === 'Ingress' ? rule.from : rule.to;
        const peerOk = !peers?.length || peers.some((peer) => peerMatches(peer, self.pod.namespace, other));
        return peerOk && portMatches(rule, port, protocol, 'outside' in destination ? undefined : destination.pod);
      }),
    );
  };
  return side('Egress', source, destination) && side('Ingress', destination, source);
}
