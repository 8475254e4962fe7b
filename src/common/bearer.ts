/**
 * The scheme is case-insensitive (RFC 9110, 11.1): `bearer` and `BEARER` are Bearer. One or more spaces
 * may follow it; the credential itself is one run of visible characters.
 */
const BEARER = /^bearer +(\S+) *$/i;

/** The credential of an `Authorization: Bearer …` header, or undefined when there is none. */
export function bearerCredential(authorization: string | undefined): string | undefined {
  return authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
}
