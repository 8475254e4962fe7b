import { createHash, createPublicKey, KeyObject, sign, verify } from 'node:crypto';

/**
 * Transparency-log checkpoints (c2sp.org/tlog-checkpoint) and the signed notes that carry them
 * (c2sp.org/signed-note), with Ed25519 keys; signed-note.spec.ts checks them against other implementations' published vectors.
 *
 * A signed note is its text (ending in a newline), a blank line, and one or more lines
 * `— <key name> <base64(4-byte key ID || signature)>`; the signature is over the text exactly. A verifier key
 * is `<name>+<key ID in hex>+<base64(0x01 || 32-byte public key)>`, the key ID being the first four bytes of
 * SHA-256(name || 0x0A || 0x01 || public key).
 *
 * Only node:crypto: Ed25519 is deterministic, so the same key and text give the same note in any implementation.
 */

/** The signature type byte of Ed25519 in signed notes and verifier keys. */
const ALG_ED25519 = 0x01;
/** The DER prefix of an Ed25519 SubjectPublicKeyInfo, before the 32 bytes of the key. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** Far above the 16 signatures that c2sp.org/signed-note requires verifiers to accept. */
const MAX_SIGNATURES = 100;
const SIGNATURE_PREFIX = '\u2014 ';

/** ASCII control characters other than newline, which no signed note may contain. */
const CONTROL = /[\x00-\x09\x0b-\x1f]/;
/** A UTF-16 surrogate without its pair: a string that has no UTF-8 encoding, so no bytes to sign. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** Standard, padded base64 (RFC 4648 section 4), as signed notes carry it. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const SIZE = /^(?:0|[1-9][0-9]*)$/;

/** A checkpoint body: a log's origin, its tree size and the Merkle root at that size, and any extension lines. */
export interface Checkpoint {
  origin: string;
  size: number;
  rootHash: Buffer;
  extensions: string[];
}

/** Whether the text has UTF-8 bytes and no control character but newline (what signed notes may contain). */
function isNoteSafe(text: string): boolean {
  return !CONTROL.test(text) && !LONE_SURROGATE.test(text);
}

/** A key name: non-empty, no plus, no Unicode white space (c2sp.org/signed-note), and nothing a note may not hold. */
function isValidName(name: string): boolean {
  return name !== '' && !name.includes('+') && !/\p{White_Space}/u.test(name) && isNoteSafe(name);
}

/** The bytes of standard padded base64, or null when the text is not that. */
function decodeBase64(text: string): Buffer | null {
  return BASE64.test(text) ? Buffer.from(text, 'base64') : null;
}

/** The key ID of an Ed25519 key: SHA-256(name || 0x0A || 0x01 || public key), first four bytes. */
function ed25519KeyId(name: string, rawPublicKey: Buffer): Buffer {
  return createHash('sha256')
    .update(name, 'utf8')
    .update(Buffer.from([0x0a, ALG_ED25519]))
    .update(rawPublicKey)
    .digest()
    .subarray(0, 4);
}

/**
 * The text of a checkpoint body: origin, decimal tree size and base64 root hash, one line each. Throws a
 * TypeError on an origin that cannot be a checkpoint's first line or a root that is not 32 bytes, and a
 * RangeError on a size that is not a non-negative safe integer.
 */
export function checkpointText(checkpoint: Pick<Checkpoint, 'origin' | 'size' | 'rootHash'>): string {
  const { origin, size, rootHash } = checkpoint;
  if (typeof origin !== 'string' || origin === '' || origin.includes('\n') || !isNoteSafe(origin)) {
    throw new TypeError('a checkpoint origin is one non-empty line of text without control characters');
  }
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError('a checkpoint tree size is a non-negative safe integer');
  if (!(rootHash instanceof Uint8Array) || rootHash.length !== 32) throw new TypeError('a checkpoint root hash is 32 bytes');
  return `${origin}\n${size}\n${Buffer.from(rootHash).toString('base64')}\n`;
}

/**
 * The checkpoint a note text states, or null when it is not a well-formed checkpoint body: at least three
 * lines, each ending in a newline; a non-empty origin; a tree size in decimal without sign or leading zero (and
 * within Number's safe integers); the canonical base64 of a 32-byte root; then any non-empty extension lines,
 * returned as they are. It checks the form only: open the note first, and compare the origin with the log's.
 */
export function parseCheckpoint(text: string): Checkpoint | null {
  if (typeof text !== 'string' || !text.endsWith('\n') || !isNoteSafe(text)) return null;
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3 || lines.some((line) => line === '')) return null;
  const [origin, sizeLine, rootLine, ...extensions] = lines;
  if (!SIZE.test(sizeLine)) return null;
  const size = Number(sizeLine);
  if (!Number.isSafeInteger(size)) return null;
  const rootHash = decodeBase64(rootLine);
  if (rootHash === null || rootHash.length !== 32 || rootHash.toString('base64') !== rootLine) return null;
  return { origin, size, rootHash, extensions };
}

/** A named Ed25519 key that signs notes, with the verifier key that checks them. */
export interface NoteSigner {
  /** The key name on its signature lines. */
  name: string;
  /** The 4-byte key ID that prefixes its signatures. */
  keyId: Buffer;
  /** `<name>+<key ID>+<base64(0x01 || public key)>`, what openNote and other signed-note verifiers take. */
  verifierKey: string;
  /**
   * The signed note of `text`: the text, a blank line, and this key's signature line. Throws a TypeError on a
   * text that no note can carry (empty, not ending in a newline, control characters other than newline, or a
   * lone surrogate).
   */
  sign(text: string): string;
}

/**
 * A note signer for an Ed25519 private key under `name`. Throws a TypeError when the key is not an Ed25519
 * private key or the name is not a valid key name (empty, or with a plus, white space or control character).
 */
export function noteSigner(name: string, privateKey: KeyObject): NoteSigner {
  if (typeof name !== 'string' || !isValidName(name)) throw new TypeError('a note key name is non-empty, without plus, spaces or control characters');
  if (!(privateKey instanceof KeyObject) || privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519') {
    throw new TypeError('a note signer needs an Ed25519 private key');
  }
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  const rawPublicKey = Buffer.from(jwk.x ?? '', 'base64url');
  const keyId = ed25519KeyId(name, rawPublicKey);
  const verifierKey = `${name}+${keyId.toString('hex')}+${Buffer.concat([Buffer.from([ALG_ED25519]), rawPublicKey]).toString('base64')}`;
  return {
    name,
    keyId: Buffer.from(keyId),
    verifierKey,
    sign(text: string): string {
      if (typeof text !== 'string' || text === '' || !text.endsWith('\n') || !isNoteSafe(text)) {
        throw new TypeError('a note text is non-empty, ends in a newline and has no control characters but newlines');
      }
      const signature = sign(null, Buffer.from(text, 'utf8'), privateKey);
      return `${text}\n${SIGNATURE_PREFIX}${name} ${Buffer.concat([keyId, signature]).toString('base64')}\n`;
    },
  };
}

/**
 * The name, key ID and Ed25519 public key of a verifier key `<name>+<8 hex digits>+<base64(0x01 || 32 bytes)>`,
 * or null when it is not one: a bad name, another algorithm, a key of another length, or a key ID that is not
 * the key's. (The hex digits are read in either case, as Go reads them; noteSigner writes them in lower case.)
 */
export function parseVerifierKey(verifierKey: string): { name: string; keyId: Buffer; publicKey: KeyObject } | null {
  if (typeof verifierKey !== 'string') return null;
  const match = /^([^+]*)\+([0-9a-fA-F]{8})\+(.*)$/s.exec(verifierKey);
  if (match === null) return null;
  const [, name, keyIdHex, key64] = match;
  const key = decodeBase64(key64);
  if (!isValidName(name) || key === null || key.length !== 33 || key[0] !== ALG_ED25519) return null;
  const rawPublicKey = key.subarray(1);
  const keyId = ed25519KeyId(name, rawPublicKey);
  if (!keyId.equals(Buffer.from(keyIdHex, 'hex'))) return null;
  try {
    const publicKey = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, rawPublicKey]), format: 'der', type: 'spki' });
    return { name, keyId, publicKey };
  } catch {
    return null;
  }
}

/** What opening a note found: its text when a signature by the key verifies, or why not. */
export type OpenedNote = { ok: true; text: string } | { ok: false; reason: 'malformed' | 'unknown_key' | 'bad_signature' };

/**
 * Opens a signed note with one verifier key. `ok` with the note's text when the note is well formed, has a
 * signature line with the key's name and key ID, and every such line verifies; signature lines of other keys
 * (another name, or the same name with another key ID) are ignored.
 *
 * - `malformed`: not valid signed-note syntax — control characters but newline, no blank line before the
 *   signatures, a signature line not `— <name> <base64 of 5 bytes or more>`, no final newline, or more than
 *   100 signatures.
 * - `unknown_key`: well formed, but no signature line is the key's; also when `verifierKey` is not a verifier
 *   key at all (check keys once with parseVerifierKey where they are configured, to tell the two apart).
 * - `bad_signature`: a signature line of the key does not verify over the text.
 *
 * Never throws. The text is the note's up to and including the newline before the blank line; parse it with
 * parseCheckpoint when it is a checkpoint.
 */
export function openNote(note: string, verifierKey: string): OpenedNote {
  if (typeof note !== 'string' || !isNoteSafe(note)) return { ok: false, reason: 'malformed' };
  // The signatures follow the last blank line; the text keeps its final newline.
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return { ok: false, reason: 'malformed' };
  const text = note.slice(0, split + 1);
  const block = note.slice(split + 2);
  if (block === '' || !block.endsWith('\n')) return { ok: false, reason: 'malformed' };
  const lines = block.slice(0, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) return { ok: false, reason: 'malformed' };

  const signatures: { name: string; keyId: Buffer; signature: Buffer }[] = [];
  for (const line of lines) {
    if (!line.startsWith(SIGNATURE_PREFIX)) return { ok: false, reason: 'malformed' };
    const rest = line.slice(SIGNATURE_PREFIX.length);
    const space = rest.indexOf(' ');
    if (space < 0) return { ok: false, reason: 'malformed' };
    const name = rest.slice(0, space);
    const bytes = decodeBase64(rest.slice(space + 1));
    if (!isValidName(name) || bytes === null || bytes.length < 5) return { ok: false, reason: 'malformed' };
    signatures.push({ name, keyId: bytes.subarray(0, 4), signature: bytes.subarray(4) });
  }

  const key = parseVerifierKey(verifierKey);
  if (key === null) return { ok: false, reason: 'unknown_key' };
  const ours = signatures.filter((s) => s.name === key.name && s.keyId.equals(key.keyId));
  if (ours.length === 0) return { ok: false, reason: 'unknown_key' };
  const data = Buffer.from(text, 'utf8');
  return ours.every(({ signature }) => verifiesEd25519(data, key.publicKey, signature)) ? { ok: true, text } : { ok: false, reason: 'bad_signature' };
}

/** Whether an Ed25519 signature of `data` verifies: false, never a throw, for a signature of the wrong length. */
function verifiesEd25519(data: Buffer, publicKey: KeyObject, signature: Buffer): boolean {
  try {
    return signature.length === 64 && verify(null, data, publicKey, signature);
  } catch {
    return false;
  }
}
