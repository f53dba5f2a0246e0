import { Slots } from './slots';

describe('Slots', () => {
  it('hands out at most `size` slots and serves waiters in arrival order', async () => {
    const slots = new Slots(2);
    await slots.acquire();
    await slots.acquire();
    const order: string[] = [];
    const a = slots.acquire().then(() => order.push('a'));
    const b = slots.acquire().then(() => order.push('b'));
    expect(slots.waiting).toBe(2);
    expect(slots.inUse).toBe(2);
    slots.release();
    await a;
    expect(order).toEqual(['a']);
    slots.release();
    await b;
    expect(order).toEqual(['a', 'b']);
    slots.release();
    slots.release();
    expect(slots.inUse).toBe(0);
    // Releasing more than was taken never creates slots.
    slots.release();
    expect(slots.inUse).toBe(0);
  });
});
