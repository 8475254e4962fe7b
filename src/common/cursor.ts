import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsNotEmpty, IsOptional, IsString } from 'class-validator';
import { AppError } from './app-error.js';

/** The largest value of a PostgreSQL bigint; a position above it would make the query itself fail. */
const MAX_BIGINT = 9_223_372_036_854_775_807n;

/** A decimal position that a bigint column can hold (forged cursors may carry any digits). */
export function isBigintPosition(value: string): boolean {
  return /^\d{1,19}$/.test(value) && BigInt(value) <= MAX_BIGINT;
}

/**
 * Opaque cursors: a kind tag and a position, base64url-encoded. Clients must not build them; a
 * cursor that does not decode is a 422 on the parameter that carried it.
 */
export function encodeCursor(kind: string, position: string): string {
  return Buffer.from(`${kind}:${position}`, 'utf8').toString('base64url');
}

/** The position of a cursor of `kind`: a bigint, checked against the column's range. */
export function decodeCursor(kind: string, cursor: string, parameter: string): string {
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  const prefix = `${kind}:`;
  const position = decoded.startsWith(prefix) ? decoded.slice(prefix.length) : '';
  const valid = isBigintPosition(position) && encodeCursor(kind, position) === cursor;
  if (!valid) throw AppError.validation([{ field: parameter, message: 'is not a cursor this API returned' }]);
  return position;
}

/** What a cursor of this API looks like (base64url), for the OpenAPI document; a value it did not issue is a 422 all the same. */
export const CURSOR_PATTERN = '^[A-Za-z0-9_-]{1,64}$';
/** The event feed's cursor: two such parts joined by a dot. */
export const FEED_CURSOR_PATTERN = '^[A-Za-z0-9_-]{1,64}\\.[A-Za-z0-9_-]{1,64}$';

/**
 * A cursor query parameter (`cursor`, the feed's `after`): optional, and when given not empty, which the
 * OpenAPI pattern says too; omitting it starts from the beginning.
 */
export function CursorParameter(description: string, pattern = CURSOR_PATTERN): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      pattern,
      maxLength: 129,
      description: `${description}. Only a cursor this API returned is accepted; any other value, an empty one included, is a 422`,
    }),
    IsOptional(),
    IsString(),
    IsNotEmpty({ message: 'must not be empty; omit it to start from the beginning' }),
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A cursor over rows ordered by a time and a uuid (newest first, say): the time as microseconds since the
 * epoch, as PostgreSQL holds it (a JavaScript Date would drop the microseconds and skip rows), and the id.
 */
export function encodeKeysetCursor(kind: string, position: string, id: string): string {
  return encodeCursor(kind, `${position}:${id}`);
}

export function decodeKeysetCursor(kind: string, cursor: string, parameter: string): { position: string; id: string } {
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  const [tag, position, id] = decoded.split(':');
  const valid = tag === kind && isBigintPosition(position ?? '') && UUID.test(id ?? '') && encodeKeysetCursor(kind, position, id) === cursor;
  if (!valid) throw AppError.validation([{ field: parameter, message: 'is not a cursor this API returned' }]);
  return { position, id };
}

/**
 * A page out of the `limit + 1` rows a list asked for: the first `limit`, and when a row was left over,
 * the cursor of the page's last row (the next page starts after it).
 */
export function pageOf<R>(rows: R[], limit: number, cursorOf: (last: R) => string): { rows: R[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: rows.length > limit ? cursorOf(page[page.length - 1]) : null };
}
