import { DynamicModule, Global, Module } from '@nestjs/common';
import { type Tracing, TRACING } from './tracing';

/** Provides TRACING: the process's Tracing, or null when tracing is off (see startTracing). */
@Global()
@Module({})
export class TracingModule {
  static forRoot(tracing: Tracing | undefined): DynamicModule {
    return { module: TracingModule, providers: [{ provide: TRACING, useValue: tracing ?? null }], exports: [TRACING] };
  }
}
