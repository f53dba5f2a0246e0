import type * as Swagger from '@nestjs/swagger';

/**
 * The @nestjs/swagger decorators the controllers describe themselves with, taken from here: each
 * records where it was put and with what, and the docs capability applies them with
 * @nestjs/swagger's own when it builds the document (applyRecordedOpenApi). why: @nestjs/swagger
 * and what it loads cost the API ~0.06 CPU-s and ~500 modules at every start (a tenth of it, this
 * host), and nothing but the document reads what they write, so an API without API_DOCS (the
 * production default) never loads it. Same names, same arguments, same types as @nestjs/swagger's.
 */
type Recorded = 'ApiBody' | 'ApiConsumes' | 'ApiHeader' | 'ApiOperation' | 'ApiParam' | 'ApiQuery' | 'ApiResponse' | 'ApiTags';

interface Use {
  name: Recorded;
  args: unknown[];
  target: object;
  key?: string | symbol;
  descriptor?: PropertyDescriptor;
}

/** Every use so far, in the order TypeScript applied them (the order @nestjs/swagger must see them in). */
const uses: Use[] = [];

function recorder<N extends Recorded>(name: N): (typeof Swagger)[N] {
  const record = (...args: unknown[]) =>
    (target: object, key?: string | symbol, descriptor?: PropertyDescriptor): void => {
      uses.push({ name, args, target, key, descriptor });
    };
  return record as unknown as (typeof Swagger)[N];
}

export const ApiBody = recorder('ApiBody');
export const ApiConsumes = recorder('ApiConsumes');
export const ApiHeader = recorder('ApiHeader');
export const ApiOperation = recorder('ApiOperation');
export const ApiParam = recorder('ApiParam');
export const ApiQuery = recorder('ApiQuery');
export const ApiResponse = recorder('ApiResponse');
export const ApiTags = recorder('ApiTags');

/**
 * Applies every recorded use with `swagger`'s decorators, in the order they were made, once: the
 * metadata then is what the decorators would have written at class definition. why the saved
 * descriptor is still the method's: no decorator of ours or Nest's replaces a method.
 */
export function applyRecordedOpenApi(swagger: typeof Swagger): void {
  for (const { name, args, target, key, descriptor } of uses.splice(0)) {
    const decorate = (swagger[name] as (...a: unknown[]) => (t: object, k?: string | symbol, d?: PropertyDescriptor) => unknown)(...args);
    decorate(target, key, descriptor);
  }
}
