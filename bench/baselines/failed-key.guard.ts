import { createHash, timingSafeEqual } from 'node:crypto';
import { Injectable, UnauthorizedException } from '@nestjs/common';
import { ThrottlerException, ThrottlerGuard, type ThrottlerRequest } from '@nestjs/throttler';
import { peerEnv } from './peer.queue';

/** Wrong keys an address may present per minute before its wrong keys get `429`: the template's AUTH_FAILURES_PER_MINUTE. */
export const FAILED_KEYS_PER_MINUTE = 16;
export const FAILED_KEY_THROTTLER = 'failed-key';

const digest = (key: string) => createHash('sha256').update(key).digest();

/**
 * The equal-guarantee peer's API-key guard on `@nestjs/throttler` with its Redis storage
 * (`@nest-lab/throttler-storage-redis`), with the template's rules: a right `x-api-key` passes
 * without a look at Redis and is never locked out; a wrong one (or none) takes one of its address's
 * FAILED_KEYS_PER_MINUTE, shared by the replicas (`401`), and past them gets `429` for a minute.
 * why handleRequest and not the stock guard: the stock one counts every request, this one failures.
 */
@Injectable()
export class FailedKeyGuard extends ThrottlerGuard {
  private readonly expected = digest(peerEnv().apiKey ?? '');

  protected override async handleRequest({ context, limit, ttl, throttler, blockDuration, getTracker }: ThrottlerRequest): Promise<boolean> {
    const { req } = this.getRequestResponse(context);
    const presented: unknown = req.headers['x-api-key'];
    if (typeof presented === 'string' && timingSafeEqual(digest(presented), this.expected)) return true;
    const key = `${FAILED_KEY_THROTTLER}:${await getTracker(req, context)}`;
    const { isBlocked } = await this.storageService.increment(key, ttl, limit, blockDuration, throttler.name!);
    if (isBlocked) throw new ThrottlerException();
    throw new UnauthorizedException('A valid x-api-key header is required');
  }
}
