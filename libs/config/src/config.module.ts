import { DynamicModule, Global, Module } from '@nestjs/common';
import { Config } from './config';

/** Injection token of the frozen Config: `@Inject(CONFIG) private readonly config: Config`. */
export const CONFIG = Symbol('CONFIG');

@Global()
@Module({})
export class ConfigModule {
  /** The config is loaded by main.ts before Nest starts, so a bad value never half-boots the app. */
  static forRoot(config: Config): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: CONFIG, useValue: config }], exports: [CONFIG] };
  }
}
