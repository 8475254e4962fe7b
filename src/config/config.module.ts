import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config.js';

/** Makes the validated AppConfig injectable everywhere; the instance is built once by the caller. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: AppConfig, useValue: config }], exports: [AppConfig] };
  }
}
