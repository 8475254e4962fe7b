import { applyDecorators, Controller, Get, Header, Redirect, Req } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error.js';
import { ConsoleAssets, CONSOLE_SCRIPTS } from './console-assets.js';

/**
 * The page may run only the script and style files served below: no inline code, no framing, no
 * form posts, and Trusted Types make any `innerHTML = <string>` throw, so rendered data can only be text.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const ConsoleResponse = (contentType: string) =>
  applyDecorators(
    Header('Content-Type', contentType),
    Header('Content-Security-Policy', CONSOLE_CSP),
    Header('X-Content-Type-Options', 'nosniff'),
    Header('X-Frame-Options', 'DENY'),
    Header('Referrer-Policy', 'no-referrer'),
    Header('Cache-Control', 'no-store'),
  );

/**
 * The admin console: public static files. Only the REST calls the page makes carry the admin token,
 * so loading the page reveals nothing.
 */
@ApiExcludeController()
@Controller('admin')
export class AdminConsoleController {
  constructor(private readonly assets: ConsoleAssets) {}

  @Get()
  @ConsoleResponse('text/html; charset=utf-8')
  page(): string {
    return this.assets.html;
  }

  /** One static route per module (no `:name` parameter, which would answer for every other /admin/<x>). */
  @Get([...CONSOLE_SCRIPTS])
  @ConsoleResponse('text/javascript; charset=utf-8')
  script(@Req() request: FastifyRequest): string {
    const script = this.assets.script(request.routeOptions.url?.split('/').pop() ?? '');
    if (script === undefined) throw new AppError('NOT_FOUND', 'No such console file');
    return script;
  }

  @Get('console.css')
  @ConsoleResponse('text/css; charset=utf-8')
  stylesheet(): string {
    return this.assets.stylesheet;
  }
}

/** The gateway's root has nothing of its own: a person who opens it wants the console. */
@ApiExcludeController()
@Controller()
export class RootRedirectController {
  @Get()
  @Redirect('/admin', 302)
  root(): void {}
}
