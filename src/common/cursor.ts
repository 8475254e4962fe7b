import { AppError } from './app-error';

/**
 * Opaque cursors: a kind tag and a position, base64url-encoded. Clients must not build them; a
 * cursor that does not decode is a 422 on the parameter that carried it.
 */
export function encodeCursor(kind: string, position: string): string {
  return Buffer.from(`${kind}:${position}`, 'utf8').toString('base64url');
}

export function decodeCursor(kind: string, cursor: string, parameter: string): string {
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = new RegExp(`^${kind}:(\\d{1,19})$`).exec(decoded);
  if (!match || encodeCursor(kind, match[1]) !== cursor) {
    throw AppError.validation([{ field: parameter, message: 'is not a cursor this API returned' }]);
  }
  return match[1];
}
