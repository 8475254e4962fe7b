import { createPrivateKey, generateKeyPairSync, generateKeySync, KeyObject } from 'node:crypto';
import { checkpointText, noteSigner, openNote, parseCheckpoint, parseVerifierKey } from './signed-note.js';

// Vectors from golang.org/x/mod/sumdb/note's own tests: repository golang/mod, path sumdb/note/note_test.go
// (TestNewVerifier, TestSign, TestOpen).
const PETER_KEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const PETER_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const ENOCH_KEY = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop';
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG = '— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';
const ENOCH_SIG = '— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n';

// The verifier key of sum.golang.org as the go command pins it: repository golang/go, path
// src/cmd/go/internal/modfetch/key.go.
const SUMDB_KEY = 'sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8';
// A checkpoint sum.golang.org signed: repository transparency-dev/trillian-tessera, path
// internal/parse/parse_test.go (BenchmarkCheckpointUnsafe). The file's string stops short of the signature
// line's final newline, which the note format requires; it is added here.
const SUMDB_CHECKPOINT =
  'go.sum database tree\n31700353\nqINS1GRFhWHwdkUeqLEoP4yEMkTBBzxBkGwGQlVlVcs=\n\n' +
  '— sum.golang.org Az3grnmrIUEDFqHzAElIQCPNoRFRAAdFo47fooyWKMHb89k11GJh5zHIfNCOBmwn/C3YI8oW9/C8DJ87F61QqspBYwM=\n';

// The examples of the specifications themselves: repository C2SP/C2SP, paths tlog-checkpoint.md and
// signed-note.md. Neither publishes the key it was signed with.
const C2SP_CHECKPOINT_TEXT = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';
const C2SP_CHECKPOINT_SIGNATURE = 'Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=';
const C2SP_NOTE =
  'Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned è subito sera.\n\n' +
  '— quasimodo.example/salvatore NnugSzTjtVAewIS+Z/iJhUPeFDkO/5QQ2i5ddnGITLlC+EhfLW9oJKONrMouFSQU0xMcXxj99ihAQwaqP3ZekRwNtIc=\n';

/** An Ed25519 private key from its 32-byte seed, as a PKCS#8 DER. */
function ed25519FromSeed(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
}

const newKey = () => generateKeyPairSync('ed25519').privateKey;
/** The last signature line of a signed note, with its newline. */
const lastLine = (note: string) => note.slice(note.lastIndexOf('\u2014'));

describe('signed notes against golang.org/x/mod/sumdb/note (golang/mod, sumdb/note/note_test.go)', () => {
  it('read its verifier key, with its key ID', () => {
    const key = parseVerifierKey(PETER_KEY);
    expect(key?.name).toBe('PeterNeumann');
    expect(key?.keyId.toString('hex')).toBe('c74f20a3');
    expect(key?.publicKey.asymmetricKeyType).toBe('ed25519');
    expect(parseVerifierKey(ENOCH_KEY)?.keyId.toString('hex')).toBe('af0cfe78');
  });

  it('refuse every substring and every one-byte change of its verifier key, as TestNewVerifier does', () => {
    for (let i = 0; i <= PETER_KEY.length; i++) {
      for (let j = i + 1; j <= PETER_KEY.length; j++) {
        if (i !== 0 || j !== PETER_KEY.length) expect(parseVerifierKey(PETER_KEY.slice(i, j))).toBeNull();
      }
    }
    for (let i = 0; i < PETER_KEY.length; i++) {
      const mangled = PETER_KEY.slice(0, i) + String.fromCharCode(PETER_KEY.charCodeAt(i) + 1) + PETER_KEY.slice(i + 1);
      expect(parseVerifierKey(mangled)).toBeNull();
    }
    // A key of the wrong length and an unknown algorithm, each with its key ID adjusted.
    expect(parseVerifierKey('PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==')).toBeNull();
    expect(parseVerifierKey('PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW')).toBeNull();
  });

  it('reproduce its signature byte for byte from its private key seed', () => {
    const seed = Buffer.from(PETER_SKEY.split('+').slice(4).join('+'), 'base64');
    expect(seed[0]).toBe(0x01);
    const signer = noteSigner('PeterNeumann', ed25519FromSeed(seed.subarray(1)));
    expect(signer.verifierKey).toBe(PETER_KEY);
    expect(signer.keyId.toString('hex')).toBe('c74f20a3');
    expect(signer.sign(GO_TEXT)).toBe(`${GO_TEXT}\n${PETER_SIG}`);
  });

  it('open its signed note, ignoring the signature of the other key', () => {
    expect(openNote(`${GO_TEXT}\n${PETER_SIG}`, PETER_KEY)).toEqual({ ok: true, text: GO_TEXT });
    expect(openNote(`${GO_TEXT}\n${PETER_SIG}${ENOCH_SIG}`, PETER_KEY)).toEqual({ ok: true, text: GO_TEXT });
    expect(openNote(`${GO_TEXT}\n${PETER_SIG}${ENOCH_SIG}`, ENOCH_KEY)).toEqual({ ok: true, text: GO_TEXT });
    expect(openNote(`${GO_TEXT}\n${PETER_SIG}`, ENOCH_KEY)).toEqual({ ok: false, reason: 'unknown_key' });
  });

  it('refuse what TestOpen refuses', () => {
    expect(openNote(`${GO_TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`, PETER_KEY)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(openNote(`${GO_TEXT}\n${PETER_SIG.repeat(101)}`, PETER_KEY)).toEqual({ ok: false, reason: 'malformed' });
    const badMessages = [
      GO_TEXT,
      `${GO_TEXT}\n`,
      `${GO_TEXT}\n${PETER_SIG.slice(0, -1)}`,
      `\x01${GO_TEXT}\n${PETER_SIG}`,
      `${GO_TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=`,
      `${GO_TEXT}\n${PETER_SIG}Unexpected line.\n`,
    ];
    for (const message of badMessages) expect(openNote(message, PETER_KEY)).toEqual({ ok: false, reason: 'malformed' });
    // Another name, or the same name with another key ID: not this key's signature.
    expect(openNote(`${GO_TEXT}\n${PETER_SIG.replace('PeterNeumann', 'CarmenSandiego')}`, PETER_KEY)).toEqual({ ok: false, reason: 'unknown_key' });
    expect(openNote(`${GO_TEXT}\n${PETER_SIG.replace('x08g', 'xxxx')}`, PETER_KEY)).toEqual({ ok: false, reason: 'unknown_key' });
  });
});

describe('checkpoints signed by sum.golang.org and in C2SP', () => {
  it('open a sum.golang.org checkpoint (trillian-tessera, internal/parse/parse_test.go) with its pinned key (golang/go)', () => {
    const opened = openNote(SUMDB_CHECKPOINT, SUMDB_KEY);
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    expect(parseCheckpoint(opened.text)).toEqual({
      origin: 'go.sum database tree',
      size: 31700353,
      rootHash: Buffer.from('a88352d464458561f076451ea8b1283f8c843244c1073c41906c0642556555cb', 'hex'),
      extensions: [],
    });
    expect(openNote(SUMDB_CHECKPOINT.replace('31700353', '31700354'), SUMDB_KEY)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(openNote(SUMDB_CHECKPOINT.slice(0, -1), SUMDB_KEY)).toEqual({ ok: false, reason: 'malformed' });
  });

  it("parse C2SP's example checkpoint (C2SP/C2SP, tlog-checkpoint.md), whose signature no published key verifies", () => {
    expect(parseCheckpoint(C2SP_CHECKPOINT_TEXT)).toEqual({
      origin: 'example.com/behind-the-sofa',
      size: 20852163,
      rootHash: Buffer.from('0ac5186a91863e8e1d90c808014aa89bf5da8e3ee1d9f07630f0378f68f1ab62', 'hex'),
      extensions: [],
    });
    // Its key ID is sum.golang.org's (033de0ae) under another name: unknown to sum.golang.org's key.
    const example = `${C2SP_CHECKPOINT_TEXT}\n— example.com/behind-the-sofa ${C2SP_CHECKPOINT_SIGNATURE}\n`;
    expect(openNote(example, SUMDB_KEY)).toEqual({ ok: false, reason: 'unknown_key' });
    // It is in fact sum.golang.org's signature of that tree with the origin and key name relabelled.
    const relabelled = `${C2SP_CHECKPOINT_TEXT.replace('example.com/behind-the-sofa', 'go.sum database tree')}\n— sum.golang.org ${C2SP_CHECKPOINT_SIGNATURE}\n`;
    expect(openNote(relabelled, SUMDB_KEY).ok).toBe(true);
  });

  it("split C2SP's example note (C2SP/C2SP, signed-note.md) at its last blank line", () => {
    const signer = noteSigner('quasimodo.example/salvatore', newKey());
    // Its key is not published: well formed, and unknown to any other key of that name.
    expect(openNote(C2SP_NOTE, signer.verifierKey)).toEqual({ ok: false, reason: 'unknown_key' });
    const text = C2SP_NOTE.slice(0, C2SP_NOTE.indexOf('\n\n\u2014') + 1);
    expect(text).toBe('Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned è subito sera.\n');
    expect(openNote(signer.sign(text), signer.verifierKey)).toEqual({ ok: true, text });
  });
});

describe('noteSigner and openNote', () => {
  const signer = noteSigner('archive.example/log', newKey());
  const text = checkpointText({ origin: 'archive.example/log', size: 42, rootHash: Buffer.alloc(32, 7) });
  const note = signer.sign(text);

  it('open what they sign, giving back the text', () => {
    expect(note).toBe(`${text}\n${lastLine(note)}`);
    expect(lastLine(note)).toMatch(/^— archive\.example\/log [A-Za-z0-9+/]{91}=\n$/);
    expect(openNote(note, signer.verifierKey)).toEqual({ ok: true, text });
    expect(parseVerifierKey(signer.verifierKey)?.keyId).toEqual(signer.keyId);
    expect(signer.verifierKey).toMatch(/^archive\.example\/log\+[0-9a-f]{8}\+/);
  });

  it('refuse a changed byte anywhere in the text', () => {
    for (let i = 0; i < text.length; i++) {
      const changed = text.slice(0, i) + (text[i] === 'A' ? 'B' : 'A') + text.slice(i + 1);
      const reason = changed.endsWith('\n') && !changed.includes('\n\n') ? 'bad_signature' : 'malformed';
      expect(openNote(`${changed}\n${lastLine(note)}`, signer.verifierKey)).toEqual({ ok: false, reason });
    }
  });

  it('refuse a changed size line', () => {
    const changed = note.replace('\n42\n', '\n43\n');
    expect(parseCheckpoint(changed.slice(0, text.length))?.size).toBe(43);
    expect(openNote(changed, signer.verifierKey)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it("give unknown_key for a signature by another key, even of the same name, and bad_signature for another key's signature under this key's ID", () => {
    const stranger = noteSigner('stranger.example/log', newKey());
    expect(openNote(stranger.sign(text), signer.verifierKey)).toEqual({ ok: false, reason: 'unknown_key' });
    const namesake = noteSigner('archive.example/log', newKey());
    expect(namesake.keyId).not.toEqual(signer.keyId);
    expect(openNote(namesake.sign(text), signer.verifierKey)).toEqual({ ok: false, reason: 'unknown_key' });
    // The namesake's signature with this key's ID in front.
    const sigBytes = Buffer.from(lastLine(namesake.sign(text)).split(' ')[2], 'base64');
    const forged = `${text}\n— archive.example/log ${Buffer.concat([signer.keyId, sigBytes.subarray(4)]).toString('base64')}\n`;
    expect(openNote(forged, signer.verifierKey)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuse a truncated signature', () => {
    const line = lastLine(note);
    const b64 = line.slice(line.lastIndexOf(' ') + 1, -1);
    // Shorter but still base64 with the key ID: this key's signature, and wrong.
    expect(openNote(`${text}\n— archive.example/log ${b64.slice(0, 88)}\n`, signer.verifierKey)).toEqual({ ok: false, reason: 'bad_signature' });
    // Cut inside a base64 quantum, or shorter than a key ID and one byte: not a signature line.
    expect(openNote(`${text}\n— archive.example/log ${b64.slice(0, -1)}\n`, signer.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
    expect(openNote(`${text}\n— archive.example/log ${b64.slice(0, 4)}\n`, signer.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
    expect(openNote(`${text}\n— archive.example/log \n`, signer.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('refuse a note without the blank line before its signatures, or a text without its final newline', () => {
    expect(openNote(`${text}${lastLine(note)}`, signer.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
    expect(openNote(`${text.slice(0, -1)}\n${lastLine(note)}`, signer.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
    expect(openNote(`${text}\n${lastLine(note)}`.replace('\u2014', '-'), signer.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
    expect(openNote(`${text}\n${lastLine(note).replace('\n', '\r\n')}`, signer.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
    expect(openNote('\ud800\n\n' + lastLine(note), signer.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('ignore signatures by other keys, before or after its own, and refuse one bad signature of its own among good ones', () => {
    const a = noteSigner('a.example/witness', newKey());
    const b = noteSigner('b.example/witness', newKey());
    const all = `${text}\n${lastLine(a.sign(text))}${lastLine(note)}${lastLine(b.sign(text))}`;
    for (const key of [signer, a, b]) expect(openNote(all, key.verifierKey)).toEqual({ ok: true, text });
    expect(openNote(`${note}${lastLine(note)}`, signer.verifierKey)).toEqual({ ok: true, text });
    const wrong = lastLine(signer.sign(`${text}x\n`));
    expect(openNote(`${note}${wrong}`, signer.verifierKey)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(openNote(`${text}\n${lastLine(a.sign(text)).repeat(100)}`, a.verifierKey)).toEqual({ ok: true, text });
    expect(openNote(`${text}\n${lastLine(a.sign(text)).repeat(101)}`, a.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('answer with a value, never a throw, whatever they are given', () => {
    const junk: unknown[] = [undefined, null, 42, '', '\n', '\n\n', note, {}];
    for (const n of junk) {
      for (const k of junk) expect(() => openNote(n as string, k as string)).not.toThrow();
    }
    expect(openNote(note, 'not a key')).toEqual({ ok: false, reason: 'unknown_key' });
    expect(openNote(undefined as unknown as string, signer.verifierKey)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('sign only Ed25519 private keys, under valid names, notes that can be opened', () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const notEd25519: KeyObject[] = [publicKey, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, generateKeySync('hmac', { length: 256 })];
    for (const key of notEd25519) expect(() => noteSigner('archive.example/log', key)).toThrow(TypeError);
    expect(() => noteSigner('archive.example/log', 'a key' as unknown as KeyObject)).toThrow(TypeError);
    for (const name of ['', 'a+b', 'a b', 'a\tb', 'a\u00a0b', 'a\u2003b', 'a\u3000b']) expect(() => noteSigner(name, newKey())).toThrow(TypeError);
    for (const bad of ['', 'no final newline', 'a\x00\n', 'tab\there\n', '\udc00\n']) expect(() => signer.sign(bad)).toThrow(TypeError);
  });
});

describe('checkpoint bodies', () => {
  const root = Buffer.alloc(32, 0xab);
  const rootLine = root.toString('base64');

  it('write three lines and read them back, size 0 included', () => {
    expect(checkpointText({ origin: 'archive.example/log', size: 0, rootHash: root })).toBe(`archive.example/log\n0\n${rootLine}\n`);
    const text = checkpointText({ origin: 'archive.example/log', size: 1234567, rootHash: root });
    expect(parseCheckpoint(text)).toEqual({ origin: 'archive.example/log', size: 1234567, rootHash: root, extensions: [] });
  });

  it('accept extension lines and return them', () => {
    expect(parseCheckpoint(`o\n5\n${rootLine}\nfirst extension\n— second\n`)?.extensions).toEqual(['first extension', '— second']);
  });

  it.each([
    ['a leading zero', `o\n05\n${rootLine}\n`],
    ['a plus sign', `o\n+5\n${rootLine}\n`],
    ['a minus sign', `o\n-5\n${rootLine}\n`],
    ['a negative zero', `o\n-0\n${rootLine}\n`],
    ['non-digits', `o\n5a\n${rootLine}\n`],
    ['a hexadecimal size', `o\n0x5\n${rootLine}\n`],
    ['a size with spaces', `o\n 5\n${rootLine}\n`],
    ['an exponent', `o\n5e3\n${rootLine}\n`],
    ['an empty size', `o\n\n${rootLine}\n`],
    ['a size beyond the safe integers', `o\n9007199254740992\n${rootLine}\n`],
    ['a root of 31 bytes', `o\n5\n${Buffer.alloc(31).toString('base64')}\n`],
    ['a root of 33 bytes', `o\n5\n${Buffer.alloc(33).toString('base64')}\n`],
    ['a root without padding', `o\n5\n${rootLine.replace('=', '')}\n`],
    ['a root in base64url', `o\n5\n${Buffer.alloc(32, 0xfb).toString('base64url')}=\n`],
    ['a root in hex', `o\n5\n${root.toString('hex')}\n`],
    ['a root not canonically encoded', `o\n5\n${rootLine.slice(0, 42)}t=\n`],
    ['two lines', `o\n5\n`],
    ['one line', `o\n`],
    ['nothing', ''],
    ['an empty origin', `\n5\n${rootLine}\n`],
    ['no final newline', `o\n5\n${rootLine}`],
    ['an empty extension line', `o\n5\n${rootLine}\n\nextension\n`],
    ['a carriage return', `o\r\n5\n${rootLine}\n`],
  ])('refuse %s', (_name, text) => {
    expect(parseCheckpoint(text)).toBeNull();
  });

  it('refuse to write what they could not read', () => {
    expect(() => checkpointText({ origin: '', size: 1, rootHash: root })).toThrow(TypeError);
    expect(() => checkpointText({ origin: 'a\nb', size: 1, rootHash: root })).toThrow(TypeError);
    expect(() => checkpointText({ origin: 'o', size: -1, rootHash: root })).toThrow(RangeError);
    expect(() => checkpointText({ origin: 'o', size: 1.5, rootHash: root })).toThrow(RangeError);
    expect(() => checkpointText({ origin: 'o', size: 2 ** 53, rootHash: root })).toThrow(RangeError);
    expect(() => checkpointText({ origin: 'o', size: 1, rootHash: Buffer.alloc(31) })).toThrow(TypeError);
  });
});
