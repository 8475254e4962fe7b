/**
 * Thrown to send a stored response as it was first sent. Nest decides the status of a returned
 * value itself, so a replay of, say, a 409 cannot be a return value; the problem filter sends it.
 */
export class IdempotentReplay {
  constructor(
    readonly status: number,
    /** JSON text, byte for byte as first sent. */
    readonly body: string,
    readonly location: string | null,
  ) {}
}
