import { DynamicModule, Global, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { NestPinoLogger } from './nest-logger';

/** Injection token of the app's pino logger: `@Inject(LOGGER) private readonly logger: Logger`. */
export const LOGGER = Symbol('LOGGER');

@Global()
@Module({})
export class LoggingModule {
  /** The logger is created by main.ts before Nest, so Nest's own start-up lines go through it too. */
  static forRoot(logger: Logger): DynamicModule {
    return {
      module: LoggingModule,
      providers: [
        { provide: LOGGER, useValue: logger },
        { provide: NestPinoLogger, useValue: new NestPinoLogger(logger) },
      ],
      exports: [LOGGER, NestPinoLogger],
    };
  }
}
