import { randomUUID } from 'node:crypto';
import { z } from 'zod';

/**
 * The small API the adapter comparison serves three ways (Nest on Fastify, Nest on Express, plain
 * node:http): a JSON GET, and a JSON POST validated with zod as the template validates job input.
 */
export const itemInput = z.strictObject({
  name: z.string().min(1).max(100),
  price: z.number().nonnegative(),
  tags: z.array(z.string().max(20)).max(10).default([]),
});

export type Item = z.output<typeof itemInput> & { id: string };

export function getItem(id: string): Item {
  return { id, name: `item ${id}`, price: 9.99, tags: ['bench', 'json'] };
}

/** The created item, or the validation issues. */
export function createItem(body: unknown): { ok: true; item: Item } | { ok: false; issues: Array<{ path: string; message: string }> } {
  const parsed = itemInput.safeParse(body);
  if (!parsed.success) return { ok: false, issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) };
  return { ok: true, item: { id: randomUUID(), ...parsed.data } };
}

export const sampleItem = { name: 'widget', price: 12.5, tags: ['a', 'b', 'c'] };
