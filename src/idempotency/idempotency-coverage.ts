import { Injectable, OnModuleInit, RequestMethod } from '@nestjs/common';
import { INTERCEPTORS_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { EXTERNAL_API_PREFIX } from '../auth/api-key.guard';
import { IdempotencyInterceptor } from './idempotency.interceptor';

type Handler = (...args: unknown[]) => unknown;

const paths = (metadata: unknown): string[] => (Array.isArray(metadata) ? metadata : [metadata ?? '']).map(String);
const join = (base: string, path: string) => `/${[base, path].map((part) => part.replace(/^\/|\/$/g, '')).filter(Boolean).join('/')}`;

/** The POST routes under /api/v1 that are not marked @Idempotent(). */
export function unguardedPosts(controllers: readonly { metatype: Function; instance: object }[], scanner: MetadataScanner): string[] {
  const missing: string[] = [];
  for (const { metatype, instance } of controllers) {
    const onClass: unknown[] = Reflect.getMetadata(INTERCEPTORS_METADATA, metatype) ?? [];
    for (const name of scanner.getAllMethodNames(Object.getPrototypeOf(instance))) {
      const handler = (instance as Record<string, Handler>)[name];
      if (Reflect.getMetadata(METHOD_METADATA, handler) !== RequestMethod.POST) continue;
      const onHandler: unknown[] = Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? [];
      if ([...onClass, ...onHandler].includes(IdempotencyInterceptor)) continue;
      for (const base of paths(Reflect.getMetadata(PATH_METADATA, metatype))) {
        for (const path of paths(Reflect.getMetadata(PATH_METADATA, handler))) {
          const route = join(base, path);
          if (`${route}/`.startsWith(EXTERNAL_API_PREFIX)) missing.push(`POST ${route}`);
        }
      }
    }
  }
  return missing;
}

/**
 * The contract makes every POST under /api/v1 idempotent. The interceptor is put on each such route
 * rather than globally (see Idempotent), so a route added without it must stop the start-up instead
 * of silently running twice on a client's retry.
 */
@Injectable()
export class IdempotencyCoverage implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    const controllers = this.discovery
      .getControllers()
      .filter((wrapper) => wrapper.metatype && wrapper.instance)
      .map((wrapper) => ({ metatype: wrapper.metatype as Function, instance: wrapper.instance as object }));
    const missing = unguardedPosts(controllers, this.scanner);
    if (missing.length > 0) throw new Error(`Not idempotent, though the contract requires it: ${missing.join(', ')}. Mark them @Idempotent().`);
  }
}
