import { Global, Module } from '@nestjs/common';
import { type Tracing, TRACING, TRACING_IMPLEMENTATION } from './tracing';

/**
 * Provides TRACING to both apps: the Tracing the capability lends under TRACING_IMPLEMENTATION, or
 * null when tracing is off or the capability is not imported.
 */
@Global()
@Module({
  providers: [
    {
      provide: TRACING,
      inject: [{ token: TRACING_IMPLEMENTATION, optional: true }],
      useFactory: (tracing?: Tracing): Tracing | null => tracing ?? null,
    },
  ],
  exports: [TRACING],
})
export class TracingModule {}
