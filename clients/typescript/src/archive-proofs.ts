import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

/**
 * Offline verification of the gateway's archive: a transparency log (RFC 9162 §2.1 Merkle tree) of every
 * feed event, whose tree heads are C2SP tlog-checkpoint notes signed with C2SP signed-note Ed25519
 * signatures. Nothing here makes a request; every expected outcome, a failed check included, is a value.
 */

/** SHA-256, the hash RFC 9162 §2.1 fixes for the tree. */
const HASH_SIZE = 32;
/** C2SP signed-note, "Signature types": 0x01 is Ed25519. */
const ED25519 = 0x01;
/** C2SP signed-note asks for a limit but at least 16; Go's golang.org/x/mod/sumdb/note allows 100. */
const MAX_SIGNATURES = 100;

/** A note verifier key, `<name>+<8 hex key id>+<base64(0x01 || 32-byte Ed25519 public key)>`, parsed. */
export interface VerifierKey {
  name: string;
  /** The uint32 key id (big-endian), as the key string's hex and each signature's first 4 bytes carry it. */
  keyId: number;
  /** The 32-byte Ed25519 public key (RFC 8032). */
  publicKey: Buffer;
  key: KeyObject;
}

/** A checkpoint's body (C2SP tlog-checkpoint, "Note text"). */
export interface Checkpoint {
  origin: string;
  /** Leaves in the tree. */
  size: number;
  /** The RFC 9162 §2.1.1 Merkle tree hash of those leaves. */
  rootHash: Buffer;
  /** Opaque extension lines, if any. */
  extensions: string[];
}

/** What `checkNewCheckpoint` compares: a tree size and its root. A `Checkpoint` is one. */
export interface TreeHead {
  size: number;
  rootHash: Uint8Array;
}

export type Outcome<T> = ({ ok: true } & T) | { ok: false; reason: string };

/** `GET /api/v1/documents/{id}/archive` as it answers. */
export interface DocumentArchive {
  /** The signed checkpoint note the proofs lead to; null before the gateway signed its first. */
  checkpoint: string | null;
  entries: ArchiveEntry[];
}

export interface ArchiveEntry {
  /** The entry's leaf index; null while its event is not sealed into the log yet. */
  index: number | null;
  /** The entry's RFC 8785 canonical JSON text: the leaf's bytes, in UTF-8. */
  entry: string;
  /** RFC 9162 §2.1.3.1 inclusion path, base64 hashes from the leaf up; absent for an entry outside the checkpoint's tree. */
  inclusionProof?: string[] | null;
}

export interface ArchiveFinding {
  /** The listed leaf index, null for a problem of the whole answer or of an entry without one. */
  index: number | null;
  /** The entry's position in `entries`, null for a problem of the whole answer. */
  position: number | null;
  problem: string;
}

export interface DocumentArchiveVerification {
  /**
   * No findings: the checkpoint (when there is one) is signed by the key, every entry it covers is proven in
   * it, and every entry is of the document. Not that every entry is proven: see `pending`.
   */
  ok: boolean;
  /** The signed checkpoint the proofs were checked against; null when the answer had none, or one that did not verify. */
  checkpoint: Checkpoint | null;
  findings: ArchiveFinding[];
  /** The leaf indexes whose inclusion proof led to the checkpoint's root. */
  proven: number[];
  /**
   * Entries no checkpoint of the answer covers yet, so nothing proves them: not sealed (`index: null`), or
   * sealed after the answer's checkpoint (an index at or beyond its size). Verify again later to prove them.
   */
  pending: number;
}

export interface VerifyDocumentArchiveOptions {
  /** The gateway's verifier key, configured out of band (never only fetched from the gateway it is to check). */
  verifierKey: string | VerifierKey;
  documentId: string;
}

/**
 * Parses a verifier key as C2SP signed-note and Go's sumdb/note write it. The key id must be the one the
 * spec recommends (SHA-256(name || 0x0A || 0x01 || key)[:4]): a key whose id does not match its bytes is a
 * mistyped or altered key, not a different one. White space around the key (a file's last newline) is ignored.
 */
export function parseVerifierKey(vkey: string): Outcome<{ key: VerifierKey }> {
  // Split at the first two plus signs only: base64 has plus signs of its own (names cannot).
  const match = /^([^+]*)\+([^+]*)\+(.*)$/s.exec(vkey.trim());
  if (!match) return { ok: false, reason: 'a verifier key is <name>+<key id>+<key>' };
  const [, name, idHex, keyBase64] = match;
  if (!isValidName(name)) return { ok: false, reason: 'the key name is empty or holds a space' };
  if (!/^[0-9a-f]{8}$/i.test(idHex)) return { ok: false, reason: 'the key id is not 8 hex digits' };
  const encoded = decodeBase64(keyBase64);
  if (!encoded || encoded.length === 0) return { ok: false, reason: 'the key is not base64' };
  if (encoded[0] !== ED25519) return { ok: false, reason: `signature type 0x${encoded[0].toString(16).padStart(2, '0')} is not Ed25519 (0x01)` };
  if (encoded.length !== 1 + 32) return { ok: false, reason: 'an Ed25519 public key is 32 bytes' };
  const keyId = parseInt(idHex, 16);
  if (computeKeyId(name, encoded) !== keyId) return { ok: false, reason: 'the key id does not match the name and key' };
  const publicKey = Buffer.from(encoded.subarray(1));
  let key: KeyObject;
  try {
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey.toString('base64url') }, format: 'jwk' });
  } catch (error) {
    return { ok: false, reason: `not an Ed25519 public key: ${error instanceof Error ? error.message : String(error)}` };
  }
  return { ok: true, key: { name, keyId, publicKey, key } };
}

/**
 * Opens a C2SP signed note: checks its syntax, then the signature of `verifierKey`, and returns the text that
 * was signed. Signatures of other keys are skipped, as the spec requires (a log may be cosigned by witnesses
 * or rotate keys); a signature that names this key and id but does not verify rejects the whole note.
 * A byte array is decoded as strict UTF-8 (a note MUST be valid UTF-8), a leading BOM kept as part of the text.
 */
export function openNote(note: string | Uint8Array, verifierKey: string | VerifierKey): Outcome<{ text: string }> {
  const parsedKey = typeof verifierKey === 'string' ? parseVerifierKey(verifierKey) : { ok: true as const, key: verifierKey };
  if (!parsedKey.ok) return { ok: false, reason: `verifier key: ${parsedKey.reason}` };
  const { key } = parsedKey;

  let message: string;
  if (typeof note === 'string') {
    if (LONE_SURROGATE.test(note)) return malformed('not valid UTF-8');
    message = note;
  } else {
    try {
      message = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(note);
    } catch {
      return malformed('not valid UTF-8');
    }
  }
  if (/[\u0000-\u0009\u000b-\u001f]/.test(message)) return malformed('a control character other than newline');

  // The text ends at the last blank line: it may hold blank lines of its own, the signature lines cannot.
  const split = message.lastIndexOf('\n\n');
  if (split < 0) return malformed('no blank line before the signatures');
  const text = message.slice(0, split + 1);
  const block = message.slice(split + 2);
  if (!block.endsWith('\n')) return malformed('the signature lines do not end in a newline');
  const lines = block.slice(0, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) return malformed(`more than ${MAX_SIGNATURES} signatures`);

  let verified = false;
  for (const line of lines) {
    if (!line.startsWith('\u2014 ')) return malformed('a signature line does not start with an em dash and a space');
    const rest = line.slice(2);
    const space = rest.indexOf(' ');
    const name = rest.slice(0, space);
    const signature = space > 0 ? decodeBase64(rest.slice(space + 1)) : null;
    if (!isValidName(name) || !signature || signature.length < 5) return malformed('a signature line is not "— <name> <base64 signature>"');
    if (name !== key.name || signature.readUInt32BE(0) !== key.keyId) continue;
    if (!verifyEd25519(key, Buffer.from(text, 'utf8'), signature.subarray(4))) {
      return { ok: false, reason: `invalid signature for key ${describeKey(key)}` };
    }
    verified = true;
  }
  if (!verified) return { ok: false, reason: `no signature by ${describeKey(key)}` };
  return { ok: true, text };
}

/**
 * Parses a checkpoint's text (C2SP tlog-checkpoint, "Note text"): the origin, the tree size in decimal
 * without leading zeros, the base64 root hash, then non-empty extension lines. Only parse a text that
 * `openNote` returned: the spec says a note's text MUST be ignored until its signature has verified.
 */
export function parseCheckpoint(text: string): Outcome<{ checkpoint: Checkpoint }> {
  if (!text.endsWith('\n')) return { ok: false, reason: 'not a checkpoint: the text does not end in a newline' };
  const [origin, sizeLine, rootLine, ...extensions] = text.slice(0, -1).split('\n');
  if (rootLine === undefined) return { ok: false, reason: 'not a checkpoint: fewer than three lines' };
  if (origin === '') return { ok: false, reason: 'not a checkpoint: the origin line is empty' };
  const size = /^(0|[1-9][0-9]*)$/.test(sizeLine) ? Number(sizeLine) : NaN;
  if (!Number.isSafeInteger(size)) return { ok: false, reason: 'not a checkpoint: the second line is not a tree size' };
  const rootHash = decodeBase64(rootLine);
  if (!rootHash || rootHash.length !== HASH_SIZE) return { ok: false, reason: 'not a checkpoint: the third line is not a base64 SHA-256 root hash' };
  if (extensions.includes('')) return { ok: false, reason: 'not a checkpoint: an empty extension line' };
  return { ok: true, checkpoint: { origin, size, rootHash, extensions } };
}

/**
 * `openNote`, then `parseCheckpoint`: the checkpoint of `GET /api/v1/archive/checkpoint` or of an archive
 * answer, once its signature verifies. The origin is returned, not compared with the key's name: the spec
 * only says the two SHOULD match.
 */
export function openCheckpoint(note: string | Uint8Array, verifierKey: string | VerifierKey): Outcome<{ checkpoint: Checkpoint }> {
  const opened = openNote(note, verifierKey);
  return opened.ok ? parseCheckpoint(opened.text) : opened;
}

/** The RFC 9162 §2.1.1 leaf hash of an entry: SHA-256(0x00 || its bytes, a text's in UTF-8). */
export function entryLeafHash(entry: string | Uint8Array): Buffer {
  return createHash('sha256')
    .update(Buffer.from([0x00]))
    .update(typeof entry === 'string' ? Buffer.from(entry, 'utf8') : entry)
    .digest();
}

/**
 * RFC 9162 §2.1.3.2: whether `proof` (the inclusion path, from the leaf up) leads from the leaf at `index`
 * to `root` in the tree of `size` leaves. Every step and the final `sn == 0` test are the RFC's; a proof
 * element or leaf hash that is not a SHA-256 hash fails, as in transparency-dev/merkle.
 */
export function verifyInclusion(leafHash: Uint8Array, index: number, size: number, proof: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!isTreeSize(index) || !isTreeSize(size) || index >= size || leafHash.length !== HASH_SIZE) return false;
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = leafHash;
  for (const p of proof) {
    if (p.length !== HASH_SIZE || sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = hashChildren(p, r);
      // The leaf is the last one at this level: its path skips levels where it has no right sibling.
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      r = hashChildren(r, p);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && equalBytes(r, root);
}

/**
 * RFC 9162 §2.1.4.2: whether `proof` shows that the tree of `from` leaves with root `fromRoot` is a prefix
 * of the tree of `to` leaves with root `toRoot`. The RFC's algorithm covers 0 < from < to; the other cases
 * are decided as transparency-dev/merkle does: equal sizes need equal roots and an empty proof, and an empty
 * tree is a prefix of every tree (with an empty proof).
 */
export function verifyConsistency(from: number, to: number, proof: readonly Uint8Array[], fromRoot: Uint8Array, toRoot: Uint8Array): boolean {
  if (!isTreeSize(from) || !isTreeSize(to) || from > to) return false;
  if (from === to) return proof.length === 0 && equalBytes(fromRoot, toRoot);
  if (from === 0) return proof.length === 0;
  // Step 1.
  if (proof.length === 0 || proof.some((c) => c.length !== HASH_SIZE)) return false;
  // Step 2: a first tree of 2^k leaves is a complete subtree of the second, and its root starts the path.
  const path = isPowerOfTwo(from) ? [fromRoot, ...proof] : [...proof];
  // Steps 3 and 4.
  let fn = from - 1;
  let sn = to - 1;
  while (fn % 2 === 1) [fn, sn] = [half(fn), half(sn)];
  // Step 5.
  let fr = path[0];
  let sr = path[0];
  // Step 6.
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = hashChildren(c, fr);
      sr = hashChildren(c, sr);
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      sr = hashChildren(sr, c);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  // Step 7.
  return sn === 0 && equalBytes(fr, fromRoot) && equalBytes(sr, toRoot);
}

/** A proof as the gateway's JSON carries it (base64 SHA-256 hashes), decoded; null when it is anything else. */
export function decodeProof(proof: unknown): Buffer[] | null {
  if (!Array.isArray(proof)) return null;
  const hashes: Buffer[] = [];
  for (const element of proof) {
    const hash = typeof element === 'string' ? decodeBase64(element) : null;
    if (!hash || hash.length !== HASH_SIZE) return null;
    hashes.push(hash);
  }
  return hashes;
}

/**
 * Checks a document's archive answer: the checkpoint's signature, the inclusion proof of each entry inside the
 * checkpoint's tree, and that each entry is of the document, carries the index it is listed at, and that
 * sealed entries come in increasing index order. Problems are returned as findings; a malformed answer is
 * one, not an exception.
 *
 * What it proves: the entries in `proven` are in the log the checkpoint commits to. Not that none is
 * missing (a log proves inclusion, not completeness), nor anything about the `pending` ones. Compare the
 * checkpoint with the last one you kept (`checkNewCheckpoint`): a valid proof in a forked log is still valid.
 */
export function verifyDocumentArchive(answer: DocumentArchive, options: VerifyDocumentArchiveOptions): DocumentArchiveVerification {
  const refused = (problem: string): DocumentArchiveVerification => ({
    ok: false,
    checkpoint: null,
    findings: [{ index: null, position: null, problem }],
    proven: [],
    pending: 0,
  });
  if (!isRecord(answer) || (typeof answer.checkpoint !== 'string' && answer.checkpoint !== null) || !Array.isArray(answer.entries)) {
    return refused('the answer is not { checkpoint, entries }');
  }
  let checkpoint: Checkpoint | null = null;
  if (answer.checkpoint !== null) {
    const opened = openCheckpoint(answer.checkpoint, options.verifierKey);
    if (!opened.ok) return refused(`checkpoint: ${opened.reason}`);
    checkpoint = opened.checkpoint;
  }
  const covered = checkpoint?.size ?? 0;

  const findings: ArchiveFinding[] = [];
  const proven: number[] = [];
  let pending = 0;
  if (answer.entries.length === 0) findings.push({ index: null, position: null, problem: 'the answer lists no entries' });
  let lastSealed = -1;
  (answer.entries as unknown[]).forEach((item, position) => {
    const listed = isRecord(item) ? item.index : undefined;
    const index = isTreeSize(listed) ? listed : null;
    const find = (problem: string) => findings.push({ index, position, problem });
    if (!isRecord(item) || typeof item.entry !== 'string' || (listed !== null && index === null)) {
      find('not { index: number | null, entry: string, inclusionProof }');
      return;
    }
    const entry = readEntry(item.entry, options.documentId);
    entry.problems.forEach(find);

    if (index === null) {
      pending += 1;
      // An entry the checkpoint covers must come with its proof: listing it as not sealed would dodge the check.
      if (isTreeSize(entry.index) && entry.index < covered) {
        find(`listed as not sealed, but its index ${entry.index} is inside the checkpoint's tree of ${covered}`);
      }
      return;
    }
    if (index <= lastSealed) find(`listed after index ${lastSealed}: sealed entries come in increasing index order`);
    lastSealed = Math.max(lastSealed, index);
    if (entry.parsed && entry.index !== index) find(`listed at index ${index}, but the entry says index ${JSON.stringify(entry.index)}`);
    if (checkpoint === null || index >= checkpoint.size) {
      // Sealed after the checkpoint was signed (checkpoints are signed less often than entries are sealed).
      pending += 1;
      return;
    }
    const proof = decodeProof(item.inclusionProof);
    if (!proof) find('the inclusion proof is missing or not a list of base64 SHA-256 hashes');
    else if (!verifyInclusion(entryLeafHash(item.entry), index, checkpoint.size, proof, checkpoint.rootHash)) {
      find(`the inclusion proof does not lead from this entry at index ${index} to the checkpoint's root`);
    } else proven.push(index);
  });
  return { ok: findings.length === 0, checkpoint, findings, proven, pending };
}

/** Where the newest checkpoint a client has verified is kept between runs: a file, a database row, a secret. */
export interface CheckpointStore {
  /** The stored signed note, or null before the first. */
  load(): Promise<string | null>;
  save(note: string): Promise<void>;
}

/** A `CheckpointStore` in memory: for tests, and for a process that checks consistency only while it runs. */
export class MemoryCheckpointStore implements CheckpointStore {
  constructor(private note: string | null = null) {}

  async load(): Promise<string | null> {
    return this.note;
  }

  async save(note: string): Promise<void> {
    this.note = note;
  }
}

export type CheckpointChange =
  /** Nothing remembered yet: trust on first use. */
  | { ok: true; change: 'first' }
  /** The same tree. */
  | { ok: true; change: 'same' }
  /** A bigger tree the consistency proof shows extends the remembered one: remember the new one. */
  | { ok: true; change: 'grown' }
  /**
   * `rollback`: a smaller tree than one already seen (a stale cache or replica, or a log hiding entries).
   * `fork`: the same size with another root: two signed, conflicting views of the log.
   * `inconsistent`: a bigger tree without a consistency proof that verifies: not shown to extend the remembered one.
   */
  | { ok: false; problem: 'rollback' | 'fork' | 'inconsistent'; reason: string };

/**
 * Decides whether `next` may replace the remembered checkpoint `previous`. A log MUST NOT sign two
 * inconsistent checkpoints (C2SP tlog-checkpoint, "Signatures"), and RFC 9162 §8.1.2 has clients check each
 * new tree head against the last with a consistency proof (§2.1.4): that is what catches a log showing
 * different histories to different clients, or rewriting its own. `consistencyProof` is
 * `GET /api/v1/archive/consistency?from=<previous.size>&to=<next.size>`, decoded (`decodeProof`).
 */
export function checkNewCheckpoint(previous: TreeHead | null, next: TreeHead, consistencyProof: readonly Uint8Array[] | null): CheckpointChange {
  if (previous === null) return { ok: true, change: 'first' };
  if (next.size < previous.size) {
    return { ok: false, problem: 'rollback', reason: `the tree has ${next.size} leaves, fewer than the ${previous.size} already seen` };
  }
  if (next.size === previous.size) {
    return equalBytes(next.rootHash, previous.rootHash)
      ? { ok: true, change: 'same' }
      : { ok: false, problem: 'fork', reason: `two different roots signed for the tree of ${next.size} leaves` };
  }
  if (consistencyProof === null) {
    return { ok: false, problem: 'inconsistent', reason: `no consistency proof from ${previous.size} to ${next.size} leaves` };
  }
  if (!verifyConsistency(previous.size, next.size, consistencyProof, previous.rootHash, next.rootHash)) {
    return { ok: false, problem: 'inconsistent', reason: `the consistency proof from ${previous.size} to ${next.size} leaves does not verify` };
  }
  return { ok: true, change: 'grown' };
}

// A lone UTF-16 surrogate has no UTF-8 encoding: such a string cannot be the note that was signed.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function malformed(why: string): { ok: false; reason: string } {
  return { ok: false, reason: `malformed note: ${why}` };
}

/** C2SP signed-note: key names MUST be non-empty and MUST NOT contain Unicode spaces or plus. */
function isValidName(name: string): boolean {
  return /^[^\s+]+$/u.test(name);
}

/** C2SP signed-note, Ed25519 signatures: key ID = SHA-256(key name || 0x0A || 0x01 || public key)[:4]. */
function computeKeyId(name: string, typeAndKey: Uint8Array): number {
  return createHash('sha256')
    .update(name, 'utf8')
    .update(Buffer.from([0x0a]))
    .update(typeAndKey)
    .digest()
    .readUInt32BE(0);
}

function describeKey(key: VerifierKey): string {
  return `${key.name}+${key.keyId.toString(16).padStart(8, '0')}`;
}

function verifyEd25519(key: VerifierKey, data: Buffer, signature: Uint8Array): boolean {
  if (signature.length !== 64) return false;
  try {
    return verify(null, data, key.key, signature);
  } catch {
    return false;
  }
}

/** RFC 4648 §4 base64, padded, in its one canonical spelling: Buffer's own decoder skips what it cannot read. */
function decodeBase64(text: string): Buffer | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}

/** RFC 9162 §2.1.1: an interior node is SHA-256(0x01 || left || right). */
function hashChildren(left: Uint8Array, right: Uint8Array): Buffer {
  return createHash('sha256')
    .update(Buffer.from([0x01]))
    .update(left)
    .update(right)
    .digest();
}

/** The RFC's right shift by one, for sizes beyond the 32 bits of JavaScript's `>>`. */
function half(n: number): number {
  return Math.floor(n / 2);
}

function isPowerOfTwo(n: number): boolean {
  while (n > 1 && n % 2 === 0) n /= 2;
  return n === 1;
}

function isTreeSize(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * An entry's text, read: JSON, in RFC 8785 canonical form (so that no two readers of the bytes the log
 * committed to can see different values, duplicate keys for one), and of the document, in `document.id`
 * and `event.documentId`.
 */
function readEntry(text: string, documentId: string): { parsed: boolean; index: unknown; problems: string[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { parsed: false, index: undefined, problems: ['the entry is not JSON'] };
  }
  if (!isRecord(value)) return { parsed: false, index: undefined, problems: ['the entry is not a JSON object'] };
  const problems: string[] = [];
  if (canonicalJson(value) !== text) problems.push('the entry is not RFC 8785 canonical JSON');
  const document = isRecord(value.document) ? value.document : {};
  const event = isRecord(value.event) ? value.event : {};
  if (document.id !== documentId) problems.push(`the entry's document is ${JSON.stringify(document.id)}, not ${documentId}`);
  if (event.documentId !== documentId) problems.push(`the entry's event is of document ${JSON.stringify(event.documentId)}, not ${documentId}`);
  return { parsed: true, index: value.index, problems };
}

/**
 * RFC 8785 serialisation of a parsed JSON value: members sorted by their names' UTF-16 code units (§3.2.3),
 * numbers and strings as ECMAScript's JSON.stringify writes them (§3.2.2). Written here rather than taken
 * from the `canonicalize` package, which is an ES module only: this package is CommonJS.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isRecord(value)) {
    const members = Object.keys(value)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${canonicalJson(value[name])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}
