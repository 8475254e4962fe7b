import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import {
  checkNewCheckpoint,
  decodeProof,
  entryLeafHash,
  MemoryCheckpointStore,
  openCheckpoint,
  openNote,
  parseCheckpoint,
  parseVerifierKey,
  verifyConsistency,
  verifyDocumentArchive,
  verifyInclusion,
  type DocumentArchive,
} from './archive-proofs';

const hex = (h: string) => Buffer.from(h, 'hex');
const sha256 = (...parts: Uint8Array[]) => parts.reduce((hash, part) => hash.update(part), createHash('sha256')).digest();

// The RFC 6962/9162 reference tree of certificate-transparency's C++ merkletree tests, as Go carries it:
// transparency-dev/merkle testonly/constants.go (LeafInputs, NodeHashes, RootHashes; commit 582a6ad190b6)
// and proof/verify_test.go (inclusionProofs, consistencyProofs, roots; commit 02194e9afb6c); the same values
// are in google/certificate-transparency-go merkletree/merkle_verifier_test.go (commit 12f4d24b7136).
const LEAF_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map(hex);
/** NodeHashes()[0]: the leaf hashes of LEAF_INPUTS. */
const LEAF_HASHES = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
  '0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7',
  '07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7',
  'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
  '4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658',
  'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
  '46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1',
].map(hex);
const EMPTY_ROOT = hex('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
/** ROOTS[n - 1]: the root of the tree of the first n leaves. */
const ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
].map(hex);
const root = (size: number) => ROOTS[size - 1];
/** inclusionProofs[1..5]; `leaf` is 1-based there (the tests verify index leaf - 1). */
const INCLUSION_PROOFS: Array<{ leaf: number; size: number; proof: Buffer[] }> = [
  { leaf: 1, size: 1, proof: [] },
  {
    leaf: 1,
    size: 8,
    proof: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ].map(hex),
  },
  {
    leaf: 6,
    size: 8,
    proof: [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ].map(hex),
  },
  { leaf: 3, size: 3, proof: ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125'].map(hex) },
  {
    leaf: 2,
    size: 5,
    proof: [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ].map(hex),
  },
];
const CONSISTENCY_PROOFS: Array<{ from: number; to: number; proof: Buffer[] }> = [
  { from: 1, to: 1, proof: [] },
  {
    from: 1,
    to: 8,
    proof: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ].map(hex),
  },
  {
    from: 6,
    to: 8,
    proof: [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ].map(hex),
  },
  {
    from: 2,
    to: 5,
    proof: ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b'].map(hex),
  },
  {
    from: 6,
    to: 7,
    proof: [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ].map(hex),
  },
];
/** verify_test.go's sha256SomeHash: a hash-sized value that is no node of the tree. */
const SOME_HASH = hex('abacaba000000000000000000000000000000000000000000060061e00123456');

// The RFC 9162 definitions, written as the RFC states them, to make the proofs of the tampering cases below:
// MTH (§2.1.1), PATH (§2.1.3.1) and PROOF/SUBPROOF (§2.1.4.1), over leaf hashes. The vectors check them first.
const split = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k; // the largest power of two smaller than n
};
const node = (left: Uint8Array, right: Uint8Array) => sha256(Buffer.from([1]), left, right);
function mth(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha256();
  if (leaves.length === 1) return leaves[0];
  const k = split(leaves.length);
  return node(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}
function path(m: number, leaves: Buffer[]): Buffer[] {
  if (leaves.length <= 1) return [];
  const k = split(leaves.length);
  return m < k ? [...path(m, leaves.slice(0, k)), mth(leaves.slice(k))] : [...path(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}
function subproof(m: number, leaves: Buffer[], complete: boolean): Buffer[] {
  const n = leaves.length;
  if (m === n) return complete ? [] : [mth(leaves)];
  const k = split(n);
  return m <= k ? [...subproof(m, leaves.slice(0, k), complete), mth(leaves.slice(k))] : [...subproof(m - k, leaves.slice(k), false), mth(leaves.slice(0, k))];
}
const consistencyProof = (m: number, leaves: Buffer[]) => (m === 0 ? [] : subproof(m, leaves, true));

/** A log of entry texts, with what the gateway would answer about it. */
function log(entries: string[]) {
  const leaves = entries.map((entry) => entryLeafHash(entry));
  return {
    entries,
    root: (size: number) => mth(leaves.slice(0, size)),
    inclusion: (index: number, size: number) => path(index, leaves.slice(0, size)),
    consistency: (from: number, to: number) => consistencyProof(from, leaves.slice(0, to)),
  };
}

/**
 * A C2SP signed-note Ed25519 signer: the verifier key, and the note of a text with one signature line
 * (`— <name> base64(key id || Ed25519 signature of the text)`).
 */
function noteSigner(name: string, privateKey: KeyObject = generateKeyPairSync('ed25519').privateKey) {
  const publicKey = Buffer.from(createPublicKey(privateKey).export({ format: 'jwk' }).x!, 'base64url');
  const typeAndKey = Buffer.concat([Buffer.from([0x01]), publicKey]);
  const keyId = sha256(Buffer.from(`${name}\n`), typeAndKey).subarray(0, 4);
  const signatureLine = (text: string, id: Buffer = keyId) =>
    `\u2014 ${name} ${Buffer.concat([id, sign(null, Buffer.from(text), privateKey)]).toString('base64')}\n`;
  return {
    vkey: `${name}+${keyId.toString('hex')}+${typeAndKey.toString('base64')}`,
    keyId,
    signatureLine,
    sign: (text: string) => `${text}\n${signatureLine(text)}`,
    checkpoint: (size: number, rootHash: Buffer, origin = name) => `${origin}\n${size}\n${rootHash.toString('base64')}\n`,
  };
}

describe('RFC 9162 Merkle tree', () => {
  it('hashes the reference leaves to the published leaf hashes (§2.1.1: SHA-256(0x00 || input))', () => {
    expect(LEAF_INPUTS.map((input) => entryLeafHash(input).toString('hex'))).toEqual(LEAF_HASHES.map((h) => h.toString('hex')));
    expect(entryLeafHash('é').equals(sha256(Buffer.from([0x00, 0xc3, 0xa9])))).toBe(true);
  });

  it("builds the published roots for sizes 0 to 8, and the published paths and proofs, with the spec's reference tree", () => {
    expect(mth([]).equals(EMPTY_ROOT)).toBe(true);
    for (let size = 1; size <= 8; size += 1) expect(mth(LEAF_HASHES.slice(0, size)).toString('hex')).toBe(root(size).toString('hex'));
    for (const { leaf, size, proof } of INCLUSION_PROOFS) expect(path(leaf - 1, LEAF_HASHES.slice(0, size))).toEqual(proof);
    for (const { from, to, proof } of CONSISTENCY_PROOFS) expect(consistencyProof(from, LEAF_HASHES.slice(0, to))).toEqual(proof);
  });

  describe('verifyInclusion (§2.1.3.2)', () => {
    it.each(INCLUSION_PROOFS)('accepts the published proof of leaf $leaf in the tree of $size', ({ leaf, size, proof }) => {
      expect(verifyInclusion(LEAF_HASHES[leaf - 1], leaf - 1, size, proof, root(size))).toBe(true);
    });

    // verify_test.go's corruptInclusionProof, each a probe that must fail.
    it.each(INCLUSION_PROOFS.filter(({ proof }) => proof.length > 0))(
      'refuses every corruption of the proof of leaf $leaf in the tree of $size',
      ({ leaf, size, proof }) => {
        const index = leaf - 1;
        const leafHash = LEAF_HASHES[index];
        const r = root(size);
        const probes: Array<[string, number, number, Uint8Array[], Uint8Array, Uint8Array]> = [
          ['leafIndex - 1', index - 1, size, proof, r, leafHash],
          ['leafIndex + 1', index + 1, size, proof, r, leafHash],
          ['leafIndex ^ 2', index ^ 2, size, proof, r, leafHash],
          ['treeSize * 2', index, size * 2, proof, r, leafHash],
          ['treeSize / 2', index, Math.floor(size / 2), proof, r, leafHash],
          ['wrong leaf', index, size, proof, r, Buffer.from('WrongLeaf')],
          ['empty root', index, size, proof, EMPTY_ROOT, leafHash],
          ['random root', index, size, proof, SOME_HASH, leafHash],
          ['trailing garbage', index, size, [...proof, Buffer.alloc(0)], r, leafHash],
          ['trailing root', index, size, [...proof, r], r, leafHash],
          ['preceding garbage', index, size, [Buffer.alloc(0), ...proof], r, leafHash],
          ['preceding root', index, size, [r, ...proof], r, leafHash],
          ['removed component', index, size, proof.slice(0, -1), r, leafHash],
          ...proof.map((_, i): [string, number, number, Uint8Array[], Uint8Array, Uint8Array] => {
            const flipped = proof.map((p) => Buffer.from(p));
            flipped[i][0] ^= 8;
            return [`modified proof[${i}] bit 3`, index, size, flipped, r, leafHash];
          }),
        ];
        if (proof.length > 1) probes.push(['inserted component', index, size, [proof[0], SOME_HASH, ...proof.slice(1)], r, leafHash]);
        const accepted = probes.filter(([, i, s, p, rootHash, leafHashProbe]) => verifyInclusion(leafHashProbe, i, s, p, rootHash)).map(([why]) => why);
        expect(accepted).toEqual([]);
      },
    );

    it('refuses impossible positions and hashes of the wrong size (TestVerifyInclusion, TestVerifyInclusionSingleEntry)', () => {
      for (const [index, size] of [
        [0, 0],
        [0, 1],
        [1, 0],
        [2, 1],
      ]) {
        expect(verifyInclusion(SOME_HASH, index, size, [], Buffer.alloc(0))).toBe(false);
        expect(verifyInclusion(Buffer.alloc(0), index, size, [], EMPTY_ROOT)).toBe(false);
        expect(verifyInclusion(SOME_HASH, index, size, [], EMPTY_ROOT)).toBe(false);
      }
      const hash = entryLeafHash('data');
      expect(verifyInclusion(hash, 0, 1, [], hash)).toBe(true);
      expect(verifyInclusion(Buffer.alloc(0), 0, 1, [], hash)).toBe(false);
      expect(verifyInclusion(hash, 0, 1, [], Buffer.alloc(0))).toBe(false);
      expect(verifyInclusion(Buffer.alloc(0), 0, 1, [], Buffer.alloc(0))).toBe(false);
      expect(verifyInclusion(hash, 0.5, 1, [], hash)).toBe(false);
    });

    it('accepts every path of the reference tree of 1 to 8 leaves, and none of another tree', () => {
      const other = LEAF_HASHES.map((h) => entryLeafHash(h));
      for (let size = 1; size <= 8; size += 1) {
        for (let index = 0; index < size; index += 1) {
          const proof = path(index, LEAF_HASHES.slice(0, size));
          expect(verifyInclusion(LEAF_HASHES[index], index, size, proof, root(size))).toBe(true);
          expect(verifyInclusion(LEAF_HASHES[index], index, size, proof, mth(other.slice(0, size)))).toBe(false);
        }
      }
    });
  });

  describe('verifyConsistency (§2.1.4.2)', () => {
    it.each(CONSISTENCY_PROOFS)('accepts the published proof from $from to $to leaves', ({ from, to, proof }) => {
      expect(verifyConsistency(from, to, proof, root(from), root(to))).toBe(true);
    });

    // verify_test.go's corruptConsistencyProof, each a probe that must fail.
    it.each(CONSISTENCY_PROOFS.filter(({ proof }) => proof.length > 0))(
      'refuses every corruption of the proof from $from to $to leaves',
      ({ from, to, proof }) => {
        const [r1, r2] = [root(from), root(to)];
        const probes: Array<[string, number, number, Uint8Array, Uint8Array, Uint8Array[]]> = [
          ['size1 - 1', from - 1, to, r1, r2, proof],
          ['size1 + 1', from + 1, to, r1, r2, proof],
          ['size1 ^ 2', from ^ 2, to, r1, r2, proof],
          ['size2 * 2', from, to * 2, r1, r2, proof],
          ['size2 / 2', from, Math.floor(to / 2), r1, r2, proof],
          ['wrong root1', from, to, Buffer.from('WrongRoot'), r2, proof],
          ['wrong root2', from, to, r1, Buffer.from('WrongRoot'), proof],
          ['swapped roots', from, to, r2, r1, proof],
          ['empty proof', from, to, r1, r2, []],
          ['trailing garbage', from, to, r1, r2, [...proof, Buffer.alloc(0)]],
          ['trailing root1', from, to, r1, r2, [...proof, r1]],
          ['trailing root2', from, to, r1, r2, [...proof, r2]],
          ['preceding garbage', from, to, r1, r2, [Buffer.alloc(0), ...proof]],
          ['preceding root1', from, to, r1, r2, [r1, ...proof]],
          ['preceding root2', from, to, r1, r2, [r2, ...proof]],
          ['preceding proof[0]', from, to, r1, r2, [proof[0], ...proof]],
          ['truncated proof', from, to, r1, r2, proof.slice(0, -1)],
          ...proof.map((_, i): [string, number, number, Uint8Array, Uint8Array, Uint8Array[]] => {
            const flipped = proof.map((p) => Buffer.from(p));
            flipped[i][0] ^= 16;
            return [`modified proof[${i}] bit 4`, from, to, r1, r2, flipped];
          }),
        ];
        const accepted = probes.filter(([, m, n, a, b, p]) => verifyConsistency(m, n, p, a, b)).map(([why]) => why);
        expect(accepted).toEqual([]);
      },
    );

    it('decides the sizes outside 0 < from < to as transparency-dev/merkle does (TestVerifyConsistency)', () => {
      const [root1, root2] = [Buffer.from("don't care 1"), Buffer.from("don't care 2")];
      const cases: Array<[number, number, Uint8Array, Uint8Array, Uint8Array[], boolean]> = [
        [0, 0, root1, root2, [], false],
        [1, 1, root1, root2, [], false],
        [0, 0, root1, root1, [], true],
        [0, 1, root1, root2, [], true],
        [1, 1, root2, root2, [], true],
        [1, 0, root1, root2, [], false],
        [2, 1, root1, root2, [], false],
        [1, 2, root1, root2, [], false],
        [0, 0, EMPTY_ROOT, root2, [], false],
        [1, 1, EMPTY_ROOT, root2, [], false],
        [0, 0, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT], false],
        [0, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT], false],
        [1, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT], false],
      ];
      expect(cases.map(([m, n, a, b, p]) => verifyConsistency(m, n, p, a, b))).toEqual(cases.map(([, , , , , want]) => want));
    });

    it('accepts every proof between trees of the reference leaves, and none towards another tree', () => {
      const other = LEAF_HASHES.map((h) => entryLeafHash(h));
      for (let to = 1; to <= 8; to += 1) {
        for (let from = 1; from <= to; from += 1) {
          const proof = consistencyProof(from, LEAF_HASHES.slice(0, to));
          expect(verifyConsistency(from, to, proof, root(from), root(to))).toBe(true);
          if (from < to) expect(verifyConsistency(from, to, proof, root(from), mth([...LEAF_HASHES.slice(0, from), ...other.slice(from, to)]))).toBe(false);
        }
      }
    });
  });
});

// golang/mod sumdb/note/note_test.go (commit 02c991387e35): TestNewVerifier, TestSign and TestOpen.
const PETER_KEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const PETER_PRIVATE_KEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const ENOCH_KEY = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop';
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG = '\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';
const ENOCH_SIG = '\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n';
/** Go slices bytes: `sig[:60] + "ABCD" + sig[60:]` in UTF-8, the em dash being 3 bytes. */
const insertAtByte = (s: string, at: number, what: string) => {
  const bytes = Buffer.from(s);
  return Buffer.concat([bytes.subarray(0, at), Buffer.from(what), bytes.subarray(at)]).toString();
};

describe('C2SP signed notes', () => {
  it("parses Go's verifier key", () => {
    const parsed = parseVerifierKey(PETER_KEY);
    expect(parsed.ok && { name: parsed.key.name, keyId: parsed.key.keyId.toString(16) }).toEqual({ name: 'PeterNeumann', keyId: 'c74f20a3' });
    expect(parseVerifierKey(`${PETER_KEY}\n`).ok).toBe(true);
  });

  it('refuses every substring and every one-byte change of the key, as TestNewVerifier does', () => {
    const accepted: string[] = [];
    for (let i = 0; i <= PETER_KEY.length; i += 1) {
      for (let j = i + 1; j <= PETER_KEY.length; j += 1) {
        if ((i !== 0 || j !== PETER_KEY.length) && parseVerifierKey(PETER_KEY.slice(i, j)).ok) accepted.push(PETER_KEY.slice(i, j));
      }
    }
    for (let i = 0; i < PETER_KEY.length; i += 1) {
      const changed = PETER_KEY.slice(0, i) + String.fromCharCode(PETER_KEY.charCodeAt(i) + 1) + PETER_KEY.slice(i + 1);
      if (parseVerifierKey(changed).ok) accepted.push(changed);
    }
    expect(accepted).toEqual([]);
    // A key of the wrong length and an unknown algorithm, each with a key id computed for it.
    expect(parseVerifierKey('PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==')).toMatchObject({ ok: false });
    expect(parseVerifierKey('PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW')).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/Ed25519/),
    });
  });

  it("opens Go's note signed by PeterNeumann, with its key as a string or parsed", () => {
    expect(openNote(TEXT + '\n' + PETER_SIG, PETER_KEY)).toEqual({ ok: true, text: TEXT });
    const parsed = parseVerifierKey(PETER_KEY);
    expect(parsed.ok && openNote(Buffer.from(TEXT + '\n' + PETER_SIG), parsed.key)).toEqual({ ok: true, text: TEXT });
  });

  it('skips the signatures of other keys, and needs one of its own key', () => {
    const both = TEXT + '\n' + PETER_SIG + ENOCH_SIG;
    expect(openNote(both, PETER_KEY)).toEqual({ ok: true, text: TEXT });
    expect(openNote(both, ENOCH_KEY)).toEqual({ ok: true, text: TEXT });
    expect(openNote(TEXT + '\n' + ENOCH_SIG, PETER_KEY)).toEqual({ ok: false, reason: 'no signature by PeterNeumann+c74f20a3' });
    const enochAbcd = insertAtByte(ENOCH_SIG, 60, 'ABCD');
    expect(openNote(TEXT + '\n' + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG + enochAbcd, PETER_KEY)).toEqual({ ok: true, text: TEXT });
    // Another key id under the same name is another key: skipped, which leaves no signature.
    expect(openNote(TEXT + '\n' + PETER_SIG.replaceAll('x08g', 'xxxx'), PETER_KEY)).toMatchObject({
      ok: false,
      reason: 'no signature by PeterNeumann+c74f20a3',
    });
  });

  it('refuses a note whose signature by its key does not verify', () => {
    expect(openNote(TEXT + '\n' + insertAtByte(PETER_SIG, 60, 'ABCD'), PETER_KEY)).toEqual({
      ok: false,
      reason: 'invalid signature for key PeterNeumann+c74f20a3',
    });
    expect(openNote(TEXT.replace('answer', 'question') + '\n' + PETER_SIG, PETER_KEY)).toEqual({
      ok: false,
      reason: 'invalid signature for key PeterNeumann+c74f20a3',
    });
  });

  it.each([
    ['the text alone', TEXT],
    ['no signature line', TEXT + '\n'],
    ['a signature line without its newline', TEXT + '\n' + PETER_SIG.slice(0, -1)],
    ['a control character', '\x01' + TEXT + '\n' + PETER_SIG],
    ['a name with a space', TEXT + '\n' + '\u2014 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM='],
    ['a line after the signatures', TEXT + '\n' + PETER_SIG + 'Unexpected line.\n'],
    ['101 signatures', TEXT + '\n' + PETER_SIG.repeat(101)],
    ['a lone surrogate', '\ud800' + TEXT + '\n' + PETER_SIG],
  ])('refuses a malformed note: %s (TestOpen)', (_case, note) => {
    expect(openNote(note, PETER_KEY)).toMatchObject({ ok: false, reason: expect.stringMatching(/^malformed note/) });
  });

  it('refuses bytes that are not UTF-8 (TestOpen)', () => {
    expect(openNote(Buffer.concat([Buffer.from([0xff]), Buffer.from(TEXT + '\n' + PETER_SIG)]), PETER_KEY)).toEqual({
      ok: false,
      reason: 'malformed note: not valid UTF-8',
    });
  });

  it("signs as Go does: the spec's signer, given Go's PeterNeumann seed, writes TestSign's note byte for byte", () => {
    const seed = Buffer.from(PETER_PRIVATE_KEY.split('+').slice(4).join('+'), 'base64').subarray(1);
    const privateKey = createPrivateKey({ key: Buffer.concat([hex('302e020100300506032b657004220420'), seed]), format: 'der', type: 'pkcs8' });
    const signer = noteSigner('PeterNeumann', privateKey);
    expect(signer.vkey).toBe(PETER_KEY);
    expect(signer.sign(TEXT)).toBe(TEXT + '\n' + PETER_SIG);
  });
});

describe('checkpoints', () => {
  const gateway = noteSigner('tax-gateway.example/archive');

  it("opens Go's note's signature but refuses its text: it is no checkpoint", () => {
    expect(openCheckpoint(TEXT + '\n' + PETER_SIG, PETER_KEY)).toMatchObject({ ok: false, reason: expect.stringMatching(/^not a checkpoint/) });
  });

  it('opens a checkpoint the gateway signed: origin, size, root hash and extension lines', () => {
    expect(openCheckpoint(gateway.sign(gateway.checkpoint(8, root(8))), gateway.vkey)).toEqual({
      ok: true,
      checkpoint: { origin: 'tax-gateway.example/archive', size: 8, rootHash: root(8), extensions: [] },
    });
    const withExtension = gateway.sign(`${gateway.checkpoint(0, EMPTY_ROOT)}extension line\n`);
    expect(openCheckpoint(withExtension, gateway.vkey)).toMatchObject({ ok: true, checkpoint: { size: 0, extensions: ['extension line'] } });
  });

  it('refuses a checkpoint signed by another key, even under the same name and key id', () => {
    const other = noteSigner('tax-gateway.example/archive');
    const text = gateway.checkpoint(8, root(8));
    expect(openCheckpoint(other.sign(text), gateway.vkey)).toEqual({
      ok: false,
      reason: `no signature by tax-gateway.example/archive+${gateway.keyId.toString('hex')}`,
    });
    expect(openCheckpoint(`${text}\n${other.signatureLine(text, gateway.keyId)}`, gateway.vkey)).toEqual({
      ok: false,
      reason: `invalid signature for key tax-gateway.example/archive+${gateway.keyId.toString('hex')}`,
    });
    expect(openCheckpoint(gateway.sign(text).replace('\n8\n', '\n9\n'), gateway.vkey)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^invalid signature/),
    });
  });

  it.each([
    ['an empty origin', `\n8\n${root(8).toString('base64')}\n`],
    ['a size with a leading zero', `log\n08\n${root(8).toString('base64')}\n`],
    ['a negative size', `log\n-8\n${root(8).toString('base64')}\n`],
    ['a size beyond 2^53', `log\n9007199254740993\n${root(8).toString('base64')}\n`],
    ['a root that is not 32 bytes', `log\n8\n${root(8).subarray(1).toString('base64')}\n`],
    ['a root in base64url', `log\n8\n${root(8).toString('base64url')}\n`],
    ['an empty extension line', `log\n8\n${root(8).toString('base64')}\n\nextension\n`],
    ['two lines', 'log\n8\n'],
    ['no final newline', `log\n8\n${root(8).toString('base64')}`],
  ])('refuses a checkpoint text with %s', (_case, text) => {
    expect(parseCheckpoint(text)).toMatchObject({ ok: false, reason: expect.stringMatching(/^not a checkpoint/) });
  });
});

describe('verifyDocumentArchive', () => {
  const gateway = noteSigner('tax-gateway.example/archive');
  const A = '2b0f4c1e-0000-4000-8000-00000000000a';
  const B = '2b0f4c1e-0000-4000-8000-00000000000b';
  // RFC 8785 canonical text: members in code-unit order at every level, no whitespace.
  const entry = (index: number | null, documentId: string, status: string, previousStatus: string | null) =>
    JSON.stringify({
      bankEventId: previousStatus ? `bank-${index ?? 9}` : null,
      document: { id: documentId, source: 'acme-erp', status, totalAmount: '119.00' },
      event: {
        createdAt: `2026-11-25T10:00:0${index ?? 9}.000Z`,
        documentId,
        id: String(100 + (index ?? 9)),
        previousStatus,
        status,
        type: previousStatus ? 'document.status_changed' : 'document.created',
      },
      index,
    });
  const archive = log([
    entry(0, A, 'PENDING_PAYMENT', null),
    entry(1, B, 'PENDING_PAYMENT', null),
    entry(2, A, 'PAID', 'PENDING_PAYMENT'),
    entry(3, B, 'PAYMENT_FAILED', 'PENDING_PAYMENT'),
    entry(4, B, 'CANCELLED', 'PAYMENT_FAILED'),
    entry(5, A, 'REFUNDED', 'PAID'),
    entry(6, B, 'CANCELLED', 'CANCELLED'),
    entry(7, A, 'PAID', 'REFUNDED'),
  ]);
  const size = 7;
  const sealed = (index: number, text = archive.entries[index]) => ({
    index,
    entry: text,
    inclusionProof: archive.inclusion(index, size).map((h) => h.toString('base64')),
  });
  /**
   * Document A's archive as the gateway answers it: proven entries against the checkpoint of 7, the entry
   * sealed since (index 7, no proof yet), and an event not sealed yet (index null, in the entry text too).
   */
  const answer = (): DocumentArchive => ({
    checkpoint: gateway.sign(gateway.checkpoint(size, archive.root(size))),
    entries: [sealed(0), sealed(2), sealed(5), { index: 7, entry: archive.entries[7] }, { index: null, entry: entry(null, A, 'CANCELLED', 'PAID') }],
  });
  const options = { verifierKey: gateway.vkey, documentId: A };

  it("verifies a document's archive: the signed checkpoint, each sealed entry's proof, and counts the pending one", () => {
    expect(verifyDocumentArchive(answer(), options)).toEqual({
      ok: true,
      checkpoint: { origin: 'tax-gateway.example/archive', size, rootHash: archive.root(size), extensions: [] },
      findings: [],
      proven: [0, 2, 5],
      pending: 2,
    });
  });

  it('proves nothing, and finds nothing wrong, before the first checkpoint; the entries are still checked', () => {
    const entries = answer().entries.map(({ index, entry: text }) => ({ index, entry: text }));
    expect(verifyDocumentArchive({ checkpoint: null, entries }, options)).toEqual({ ok: true, checkpoint: null, findings: [], proven: [], pending: 5 });
    const withOther = verifyDocumentArchive({ checkpoint: null, entries: [...entries.slice(0, 1), { index: 1, entry: archive.entries[1] }] }, options);
    expect(withOther).toMatchObject({ ok: false, findings: [{ index: 1 }, { index: 1 }] });
  });

  const tampered: Array<[string, (a: DocumentArchive) => void, Array<{ index: number | null; problem: RegExp }>]> = [
    [
      'an edited entry text',
      (a) => (a.entries[1].entry = a.entries[1].entry.replace('"PAID"', '"CANCELLED"')),
      [{ index: 2, problem: /inclusion proof does not lead/ }],
    ],
    ['swapped entries', (a) => ([a.entries[0], a.entries[1]] = [a.entries[1], a.entries[0]]), [{ index: 0, problem: /listed after index 2/ }]],
    [
      'swapped entry texts',
      (a) => ([a.entries[0].entry, a.entries[1].entry] = [a.entries[1].entry, a.entries[0].entry]),
      [
        { index: 0, problem: /listed at index 0, but the entry says index 2/ },
        { index: 0, problem: /inclusion proof does not lead/ },
        { index: 2, problem: /listed at index 2, but the entry says index 0/ },
        { index: 2, problem: /inclusion proof does not lead/ },
      ],
    ],
    [
      'a proof byte flipped',
      (a) => {
        const hash = Buffer.from(a.entries[2].inclusionProof![1], 'base64');
        hash[7] ^= 1;
        a.entries[2].inclusionProof![1] = hash.toString('base64');
      },
      [{ index: 5, problem: /inclusion proof does not lead/ }],
    ],
    [
      'a checkpoint signed by another key',
      (a) => (a.checkpoint = noteSigner('tax-gateway.example/archive').sign(gateway.checkpoint(size, archive.root(size)))),
      [{ index: null, problem: /^checkpoint: no signature by/ }],
    ],
    [
      "another document's entry, with its valid proof",
      (a) => a.entries.splice(1, 0, sealed(1)),
      [
        { index: 1, problem: new RegExp(`document is "${B}", not ${A}`) },
        { index: 1, problem: new RegExp(`event is of document "${B}", not ${A}`) },
      ],
    ],
    [
      'a sealed entry listed as pending',
      (a) => (a.entries[2] = { index: null, entry: archive.entries[5] }),
      [{ index: null, problem: /listed as not sealed, but its index 5 is inside the checkpoint's tree of 7/ }],
    ],
    ['an entry inside the tree without its proof', (a) => delete a.entries[1].inclusionProof, [{ index: 2, problem: /inclusion proof is missing/ }]],
    [
      'a proof that is not base64 hashes',
      (a) => (a.entries[0].inclusionProof = ['not base64!']),
      [{ index: 0, problem: /not a list of base64 SHA-256 hashes/ }],
    ],
    [
      'an entry listed at another index than its own',
      (a) => (a.entries[3] = { index: 9, entry: archive.entries[7] }),
      [{ index: 9, problem: /listed at index 9, but the entry says index 7/ }],
    ],
  ];
  it.each(tampered)('finds %s', (_case, tamper, expected) => {
    const a = answer();
    tamper(a);
    const result = verifyDocumentArchive(a, options);
    expect(result.ok).toBe(false);
    expect(result.findings).toEqual(expected.map(({ index, problem }) => expect.objectContaining({ index, problem: expect.stringMatching(problem) })));
  });

  it('finds an entry that is not RFC 8785 canonical JSON, though the log holds it and proves it', () => {
    const text = `{"index":0,"bankEventId":null,"document":{"id":"${A}"},"event":{"documentId":"${A}"}}`;
    const other = log([text]);
    const result = verifyDocumentArchive(
      { checkpoint: gateway.sign(gateway.checkpoint(1, other.root(1))), entries: [{ index: 0, entry: text, inclusionProof: [] }] },
      options,
    );
    expect(result).toMatchObject({ ok: false, proven: [0], findings: [{ index: 0, problem: 'the entry is not RFC 8785 canonical JSON' }] });
  });

  it.each([
    ['null', null],
    ['no entries array', { checkpoint: 'x', entries: {} }],
    ['an entry that is no object', { ...answer(), entries: [42] }],
    ['an entry index that is no integer', { ...answer(), entries: [{ ...sealed(0), index: '0' }] }],
    ['an entry text that is not JSON', { ...answer(), entries: [{ ...sealed(0), entry: '{' }] }],
    ['no entries', { ...answer(), entries: [] }],
  ])('returns findings, without throwing, for an answer with %s', (_case, bad) => {
    const result = verifyDocumentArchive(bad as unknown as DocumentArchive, options);
    expect(result.ok).toBe(false);
    expect(result.findings.length).toBeGreaterThan(0);
  });
});

describe('checkNewCheckpoint, with a CheckpointStore', () => {
  const gateway = noteSigner('tax-gateway.example/archive');
  const ours = log(Array.from({ length: 9 }, (_, i) => `{"index":${i}}`));
  const theirs = log(Array.from({ length: 12 }, (_, i) => `{"index":${i},"forked":true}`));
  const checkpointOf = (tree: ReturnType<typeof log>, size: number) => gateway.sign(gateway.checkpoint(size, tree.root(size)));
  const open = (note: string | null) => {
    if (note === null) return null;
    const opened = openCheckpoint(note, gateway.vkey);
    if (!opened.ok) throw new Error(opened.reason);
    return opened.checkpoint;
  };
  // The consistency endpoint's answer, as JSON carries it.
  const consistencyAnswer = (tree: ReturnType<typeof log>, from: number, to: number) => ({
    proof: tree.consistency(from, to).map((h) => h.toString('base64')),
  });

  it('remembers the first checkpoint, then moves only to a bigger tree proven to extend it', async () => {
    const store = new MemoryCheckpointStore();
    expect(checkNewCheckpoint(open(await store.load()), open(checkpointOf(ours, 4))!, null)).toEqual({ ok: true, change: 'first' });
    await store.save(checkpointOf(ours, 4));

    const previous = open(await store.load());
    const next = open(checkpointOf(ours, 9))!;
    const proof = decodeProof(consistencyAnswer(ours, previous!.size, next.size).proof);
    expect(checkNewCheckpoint(previous, next, proof)).toEqual({ ok: true, change: 'grown' });
    await store.save(checkpointOf(ours, 9));

    expect(checkNewCheckpoint(open(await store.load()), open(checkpointOf(ours, 9))!, null)).toEqual({ ok: true, change: 'same' });
    expect(checkNewCheckpoint(open(checkpointOf(ours, 0)), next, [])).toEqual({ ok: true, change: 'grown' });
  });

  it('rejects a rollback to a smaller tree', () => {
    expect(checkNewCheckpoint(open(checkpointOf(ours, 9)), open(checkpointOf(ours, 4))!, decodeProof(consistencyAnswer(ours, 4, 9).proof))).toEqual({
      ok: false,
      problem: 'rollback',
      reason: 'the tree has 4 leaves, fewer than the 9 already seen',
    });
  });

  it('rejects another root for the same size: a fork', () => {
    expect(checkNewCheckpoint(open(checkpointOf(ours, 9)), open(checkpointOf(theirs, 9))!, null)).toMatchObject({ ok: false, problem: 'fork' });
  });

  it("rejects a bigger tree of a different log, with that log's own consistency proof", () => {
    const previous = open(checkpointOf(ours, 9));
    const next = open(checkpointOf(theirs, 12))!;
    expect(checkNewCheckpoint(previous, next, decodeProof(consistencyAnswer(theirs, 9, 12).proof))).toEqual({
      ok: false,
      problem: 'inconsistent',
      reason: 'the consistency proof from 9 to 12 leaves does not verify',
    });
    expect(checkNewCheckpoint(previous, next, null)).toMatchObject({ ok: false, problem: 'inconsistent' });
    expect(checkNewCheckpoint(previous, open(checkpointOf(ours, 9))!, null)).toEqual({ ok: true, change: 'same' });
  });

  it('decodes only base64 SHA-256 hashes as a proof', () => {
    expect(decodeProof([root(1).toString('base64')])).toEqual([root(1)]);
    for (const bad of [null, 'x', [1], ['AAAA'], [root(1).toString('base64url')], [`${root(1).toString('base64')} `]]) expect(decodeProof(bad)).toBeNull();
  });
});
