import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  consistencyProofRanges,
  EMPTY_ROOT,
  inclusionProofRanges,
  leafHash,
  nodeHash,
  nodesCompletedBy,
  nodesForRanges,
  rangeHash,
  rangeNodes,
  verifyConsistency,
  verifyInclusion,
  type NodeRef,
} from './merkle.js';

const hex = (text: string) => Buffer.from(text, 'hex');
/** SHA-256 of the parts, written apart from merkle.ts so that the checks below do not use what they check. */
const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

/*
 * The RFC 6962 test vectors (RFC 9162 hashes the same way), as transparency-dev/merkle publishes them:
 * - leaf inputs, node hashes and root hashes: testonly/constants.go (LeafInputs, NodeHashes, RootHashes, EmptyRootHash),
 *   commit 417fb0c314750d94e53942e9f92e79b6d35915db;
 * - inclusion and consistency proofs: proof/verify_test.go (inclusionProofs, consistencyProofs), commit
 *   022f84cb1f2655a4399874cfa190c3f1d60b32a8; they have since moved to cmd/proofgen/main.go, which writes testdata/.
 * They come from certificate-transparency's C++ merkle_tree_test.cc; google/certificate-transparency-go has the same
 * in merkletree/merkle_verifier_test.go (without the consistency proof 6 -> 7). Those files number leaves from 1;
 * the indexes below are 0-based.
 */
const LEAF_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map(hex);

/** NodeHashes(): [level][index] for the tree of the 8 leaf inputs. */
const NODE_HASHES = [
  [
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
    '0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7',
    '07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7',
    'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    '4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658',
    'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
    '46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1',
  ],
  [
    'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
    '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
    'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
  ],
  ['d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'],
  ['5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328'],
];

/** RootHashes(): the root of the tree of the first n leaf inputs, at index n (EmptyRootHash() at 0). */
const ROOT_HASHES = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
].map(hex);

/** inclusionProofs: {leaf 1, size 1}, {1, 8}, {6, 8}, {3, 3}, {2, 5} with 1-based leaves. */
const INCLUSION_PROOFS: Array<{ index: number; size: number; proof: string[] }> = [
  { index: 0, size: 1, proof: [] },
  {
    index: 0,
    size: 8,
    proof: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  },
  {
    index: 5,
    size: 8,
    proof: [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
  { index: 2, size: 3, proof: ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125'] },
  {
    index: 1,
    size: 5,
    proof: [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  },
];

/** consistencyProofs: {size1, size2, proof}. */
const CONSISTENCY_PROOFS: Array<{ from: number; to: number; proof: string[] }> = [
  { from: 1, to: 1, proof: [] },
  {
    from: 1,
    to: 8,
    proof: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  },
  {
    from: 6,
    to: 8,
    proof: [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
  {
    from: 2,
    to: 5,
    proof: ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b'],
  },
  {
    from: 6,
    to: 7,
    proof: [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
];

/** MTH straight from RFC 9162 section 2.1.1, over the entries themselves. */
function naiveRoot(entries: readonly Buffer[]): Buffer {
  if (entries.length === 0) return sha256();
  if (entries.length === 1) return sha256(Buffer.of(0x00), entries[0]);
  let k = 1;
  while (k * 2 < entries.length) k *= 2;
  return sha256(Buffer.of(0x01), naiveRoot(entries.slice(0, k)), naiveRoot(entries.slice(k)));
}

/*
 * A second verifier, RFC 9162 sections 2.1.3.2 and 2.1.4.2 step by step on bigints (merkle.ts does the same on
 * numbers with arithmetic), hashing with sha256 above.
 */
const lsb = (x: bigint) => (x & 1n) === 1n;

function rfcVerifyInclusion(hash: Buffer, leafIndex: number, treeSize: number, inclusionPath: readonly Buffer[], rootHash: Buffer): boolean {
  if (leafIndex < 0 || treeSize < 1) return false; // The RFC's numbers are unsigned.
  // 1. leaf_index >= tree_size fails.
  if (leafIndex >= treeSize) return false;
  // 2., 3.
  let fn = BigInt(leafIndex);
  let sn = BigInt(treeSize) - 1n;
  let r = hash;
  // 4.
  for (const p of inclusionPath) {
    if (sn === 0n) return false;
    if (lsb(fn) || fn === sn) {
      r = sha256(Buffer.of(0x01), p, r);
      if (!lsb(fn)) {
        do {
          fn >>= 1n;
          sn >>= 1n;
        } while (!lsb(fn) && fn !== 0n);
      }
    } else {
      r = sha256(Buffer.of(0x01), r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  // 5.
  return sn === 0n && r.equals(rootHash);
}

function rfcVerifyConsistency(first: number, second: number, consistencyPath: readonly Buffer[], firstHash: Buffer, secondHash: Buffer): boolean {
  if (first < 1 || first > second) return false;
  if (first === second) return consistencyPath.length === 0 && firstHash.equals(secondHash);
  // 1.
  if (consistencyPath.length === 0) return false;
  // 2.
  const path = (BigInt(first) & (BigInt(first) - 1n)) === 0n ? [firstHash, ...consistencyPath] : [...consistencyPath];
  // 3., 4.
  let fn = BigInt(first) - 1n;
  let sn = BigInt(second) - 1n;
  while (lsb(fn)) {
    fn >>= 1n;
    sn >>= 1n;
  }
  // 5.
  let fr = path[0];
  let sr = path[0];
  // 6.
  for (const c of path.slice(1)) {
    if (sn === 0n) return false;
    if (lsb(fn) || fn === sn) {
      fr = sha256(Buffer.of(0x01), c, fr);
      sr = sha256(Buffer.of(0x01), c, sr);
      if (!lsb(fn)) {
        do {
          fn >>= 1n;
          sn >>= 1n;
        } while (!lsb(fn) && fn !== 0n);
      }
    } else {
      sr = sha256(Buffer.of(0x01), sr, c);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  // 7.
  return fr.equals(firstHash) && sr.equals(secondHash) && sn === 0n;
}

const key = (node: NodeRef) => `${node.level}:${node.index}`;

/** An in-memory node table, filled as the archive fills its own: each leaf hash, then the nodes that leaf completes. */
class NodeStore {
  readonly hashes = new Map<string, Buffer>();
  size = 0;

  constructor(entries: readonly Buffer[]) {
    for (const entry of entries) this.append(entry);
  }

  append(entry: Buffer): void {
    this.hashes.set(key({ level: 0, index: this.size }), leafHash(entry));
    for (const node of nodesCompletedBy(this.size)) this.hashes.set(key(node), nodeHash(this.get(node.left), this.get(node.right)));
    this.size++;
  }

  get(node: NodeRef): Buffer {
    const hash = this.hashes.get(key(node));
    if (hash === undefined) throw new Error(`no node ${key(node)}`);
    return hash;
  }

  /** A lookup that sees only the nodes the table had when the tree was of `size`. */
  lookupAt(size: number): (node: NodeRef) => Buffer | undefined {
    return (node) => ((node.index + 1) * 2 ** node.level <= size ? this.hashes.get(key(node)) : undefined);
  }
}

/** The largest power of two below n (n >= 2), as the RFC splits; 1 for n = 1. In bigints, apart from merkle.ts. */
function kOf(n: number): number {
  return n === 1 ? 1 : 2 ** ((BigInt(n) - 1n).toString(2).length - 1);
}

function throwsRangeError(call: () => unknown): boolean {
  try {
    call();
    return false;
  } catch (error) {
    return error instanceof RangeError;
  }
}

const ceilLog2 = (n: number) => (n === 1 ? 0 : (BigInt(n) - 1n).toString(2).length);

const flipped = (proof: readonly Buffer[], at: number) =>
  proof.map((hash, i) => (i === at ? Buffer.from(hash.map((byte, j) => (j === at % 32 ? byte ^ 0x01 : byte))) : hash));

interface InclusionClaim {
  leaf: Buffer;
  index: number;
  size: number;
  proof: Buffer[];
  root: Buffer;
}

interface ConsistencyClaim {
  from: number;
  to: number;
  proof: Buffer[];
  fromRoot: Buffer;
  toRoot: Buffer;
}

const acceptsInclusion = (c: InclusionClaim) => ({
  merkle: verifyInclusion(c.leaf, c.index, c.size, c.proof, c.root),
  rfc: rfcVerifyInclusion(c.leaf, c.index, c.size, c.proof, c.root),
});

const acceptsConsistency = (c: ConsistencyClaim) => ({
  merkle: verifyConsistency(c.from, c.to, c.proof, c.fromRoot, c.toRoot),
  rfc: rfcVerifyConsistency(c.from, c.to, c.proof, c.fromRoot, c.toRoot),
});

describe('Merkle tree hashes (RFC 9162 section 2.1.1)', () => {
  it('hash a leaf as SHA-256(0x00 || entry), a string as its UTF-8, and match the published leaf hashes', () => {
    LEAF_INPUTS.forEach((input, i) => expect(leafHash(input).toString('hex')).toBe(NODE_HASHES[0][i]));
    expect(leafHash('grüße')).toEqual(sha256(Buffer.of(0x00), Buffer.from('grüße', 'utf8')));
  });

  it('hash a node as SHA-256(0x01 || left || right), and the empty tree as SHA-256 of nothing', () => {
    expect(nodeHash(hex(NODE_HASHES[0][0]), hex(NODE_HASHES[0][1])).toString('hex')).toBe(NODE_HASHES[1][0]);
    expect(EMPTY_ROOT).toEqual(ROOT_HASHES[0]);
    expect(naiveRoot([])).toEqual(EMPTY_ROOT);
  });
});

describe('the published test vectors (transparency-dev/merkle)', () => {
  const store = new NodeStore(LEAF_INPUTS);

  it('fill the node table with exactly the published node hashes', () => {
    const published = new Map(NODE_HASHES.flatMap((level, l) => level.map((hash, index) => [`${l}:${index}`, hash] as const)));
    expect(new Map([...store.hashes].map(([k, hash]) => [k, hash.toString('hex')]))).toEqual(published);
  });

  it.each(ROOT_HASHES.slice(1).map((root, i) => [i + 1, root] as const))('give the published root of size %d', (size, root) => {
    expect(rangeHash(0, size, store.lookupAt(size))).toEqual(root);
    expect(naiveRoot(LEAF_INPUTS.slice(0, size))).toEqual(root);
  });

  it.each(INCLUSION_PROOFS)('give and verify the published inclusion proof of leaf $index in size $size', ({ index, size, proof }) => {
    const hashes = inclusionProofRanges(index, size).map(([start, end]) => rangeHash(start, end, store.lookupAt(size)));
    expect(hashes.map((hash) => hash.toString('hex'))).toEqual(proof);
    const claim = { leaf: leafHash(LEAF_INPUTS[index]), index, size, proof: proof.map(hex), root: ROOT_HASHES[size] };
    expect(acceptsInclusion(claim)).toEqual({ merkle: true, rfc: true });
  });

  it.each(CONSISTENCY_PROOFS)('give and verify the published consistency proof from $from to $to', ({ from, to, proof }) => {
    const hashes = consistencyProofRanges(from, to).map(([start, end]) => rangeHash(start, end, store.lookupAt(to)));
    expect(hashes.map((hash) => hash.toString('hex'))).toEqual(proof);
    const claim = { from, to, proof: proof.map(hex), fromRoot: ROOT_HASHES[from], toRoot: ROOT_HASHES[to] };
    expect(acceptsConsistency(claim)).toEqual({ merkle: true, rfc: true });
  });
});

describe('nodesCompletedBy', () => {
  it('names the nodes a leaf completes, lowest first, with their children', () => {
    expect(nodesCompletedBy(0)).toEqual([]);
    expect(nodesCompletedBy(2)).toEqual([]);
    expect(nodesCompletedBy(5)).toEqual([{ level: 1, index: 2, left: { level: 0, index: 4 }, right: { level: 0, index: 5 } }]);
    expect(nodesCompletedBy(7)).toEqual([
      { level: 1, index: 3, left: { level: 0, index: 6 }, right: { level: 0, index: 7 } },
      { level: 2, index: 1, left: { level: 1, index: 2 }, right: { level: 1, index: 3 } },
      { level: 3, index: 0, left: { level: 2, index: 0 }, right: { level: 2, index: 1 } },
    ]);
  });

  it('reaches the 2^53rd leaf without losing bits', () => {
    const completed = nodesCompletedBy(2 ** 53 - 1);
    expect(completed).toHaveLength(53);
    expect(completed[52]).toEqual({ level: 53, index: 0, left: { level: 52, index: 0 }, right: { level: 52, index: 1 } });
    expect(nodesCompletedBy(2 ** 53 - 2)).toEqual([]);
  });

  it('leaves, after each append, the table holding every perfect aligned subtree of the tree so far and nothing else', () => {
    const store = new NodeStore([]);
    for (let size = 1; size <= 70; size++) {
      store.append(Buffer.from(`entry ${size - 1}`));
      const expected: string[] = [];
      for (let level = 0; 2 ** level <= size; level++) {
        for (let index = 0; (index + 1) * 2 ** level <= size; index++) expected.push(`${level}:${index}`);
      }
      expect([...store.hashes.keys()].sort()).toEqual(expected.sort());
    }
  });
});

describe('round trips for every tree of 1 to 70 leaves', () => {
  const entries = Array.from({ length: 70 }, (_, i) => Buffer.from(`entry ${i}`));
  const store = new NodeStore(entries);
  const roots = [EMPTY_ROOT, ...entries.map((_, i) => rangeHash(0, i + 1, store.lookupAt(i + 1)))];
  /** The root of the tree of `size` whose leaves a and b are swapped. */
  const swappedRoot = (size: number, a: number, b: number) => {
    const swapped = entries.slice(0, size);
    [swapped[a], swapped[b]] = [swapped[b], swapped[a]];
    return naiveRoot(swapped);
  };

  it('compute every root from the stored nodes as the naive MTH does', () => {
    for (let size = 1; size <= 70; size++) expect(roots[size]).toEqual(naiveRoot(entries.slice(0, size)));
  });

  it('compute MTH(D[start:end]) of every range made of stored nodes, and refuse the others', () => {
    const wrong: string[] = [];
    for (let start = 0; start < 70; start++) {
      for (let end = start + 1; end <= 70; end++) {
        if (start % kOf(end - start) === 0) {
          if (!rangeHash(start, end, store.lookupAt(end)).equals(naiveRoot(entries.slice(start, end)))) wrong.push(`[${start}, ${end})`);
        } else {
          expect(() => rangeNodes(start, end)).toThrow(RangeError);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('give inclusion proofs that both verifiers accept, and that neither accepts tampered with', () => {
    const wrong: string[] = [];
    for (let size = 1; size <= 70; size++) {
      for (let index = 0; index < size; index++) {
        const ranges = inclusionProofRanges(index, size);
        const proof = ranges.map(([start, end]) => rangeHash(start, end, store.lookupAt(size)));
        const claim: InclusionClaim = { leaf: leafHash(entries[index]), index, size, proof, root: roots[size] };
        const name = `leaf ${index} of ${size}`;
        if (proof.length > ceilLog2(size)) wrong.push(`${name}: ${proof.length} hashes`);
        const accepted = acceptsInclusion(claim);
        if (!accepted.merkle || !accepted.rfc) wrong.push(`${name}: refused ${JSON.stringify(accepted)}`);

        // Not size + 1 or - 1: a client learns the size only from the shape of the path, which neighbouring sizes may share
        // (leaf 0's proof in the tree of 6 verifies as in a tree of 7, against the root of 6); doubling or halving changes its length.
        const neighbour = index % 2 === 0 && index + 1 < size ? index + 1 : index - 1;
        const tampered: Array<[string, InclusionClaim]> = [
          ...proof.map((_, i): [string, InclusionClaim] => [`a byte of proof[${i}] flipped`, { ...claim, proof: flipped(proof, i) }]),
          ['index + 1', { ...claim, index: index + 1 }],
          ['index - 1', { ...claim, index: index - 1 }],
          ['size * 2', { ...claim, size: size * 2 }],
          ['size / 2', { ...claim, size: Math.floor(size / 2) }],
          ['the proof and another hash', { ...claim, proof: [...proof, roots[size]] }],
          ['another hash and the proof', { ...claim, proof: [roots[size], ...proof] }],
          ['the root of the tree before', { ...claim, root: roots[size - 1] }],
        ];
        if (proof.length > 0) tampered.push(['the proof without its last hash', { ...claim, proof: proof.slice(0, -1) }]);
        if (size > 1) {
          tampered.push(["the neighbour's leaf", { ...claim, leaf: leafHash(entries[neighbour]) }]);
          tampered.push(['the root of the tree with the leaf and its neighbour swapped', { ...claim, root: swappedRoot(size, index, neighbour) }]);
        }
        for (const [how, bad] of tampered) {
          const result = acceptsInclusion(bad);
          if (result.merkle || result.rfc) wrong.push(`${name}, ${how}: accepted ${JSON.stringify(result)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('give consistency proofs that both verifiers accept, and that neither accepts tampered with', () => {
    const wrong: string[] = [];
    for (let to = 1; to <= 70; to++) {
      for (let from = 1; from <= to; from++) {
        const ranges = consistencyProofRanges(from, to);
        const proof = ranges.map(([start, end]) => rangeHash(start, end, store.lookupAt(to)));
        const claim: ConsistencyClaim = { from, to, proof, fromRoot: roots[from], toRoot: roots[to] };
        const name = `${from} to ${to}`;
        if (proof.length > ceilLog2(to) + 1) wrong.push(`${name}: ${proof.length} hashes`);
        const accepted = acceptsConsistency(claim);
        if (!accepted.merkle || !accepted.rfc) wrong.push(`${name}: refused ${JSON.stringify(accepted)}`);

        const tampered: Array<[string, ConsistencyClaim]> = [
          ...proof.map((_, i): [string, ConsistencyClaim] => [`a byte of proof[${i}] flipped`, { ...claim, proof: flipped(proof, i) }]),
          ['the proof and another hash', { ...claim, proof: [...proof, roots[to]] }],
          ['another hash and the proof', { ...claim, proof: [roots[from], ...proof] }],
          ['from - 1', { ...claim, from: from - 1 }],
          ['to * 2', { ...claim, to: to * 2 }],
        ];
        if (proof.length > 0) tampered.push(['the proof without its last hash', { ...claim, proof: proof.slice(0, -1) }]);
        if (to > 1) tampered.push(['the new root of the tree with its last two leaves swapped', { ...claim, toRoot: swappedRoot(to, to - 2, to - 1) }]);
        if (from < to) tampered.push(['the roots swapped', { ...claim, fromRoot: roots[to], toRoot: roots[from] }]);
        if (from > 1) tampered.push(['the old root of the tree with its first two leaves swapped', { ...claim, fromRoot: swappedRoot(from, 0, 1) }]);
        if (Math.floor(to / 2) >= from && from < to) tampered.push(['to / 2', { ...claim, to: Math.floor(to / 2) }]);
        for (const [how, bad] of tampered) {
          const result = acceptsConsistency(bad);
          if (result.merkle || result.rfc) wrong.push(`${name}, ${how}: accepted ${JSON.stringify(result)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('name each stored node of a set of ranges once, so that one query fetches them all', () => {
    const ranges = [...inclusionProofRanges(37, 70), ...consistencyProofRanges(37, 70), [0, 70] as [number, number]];
    const nodes = nodesForRanges(ranges);
    expect(new Set(nodes.map(key)).size).toBe(nodes.length);
    expect(new Set(nodes.map(key))).toEqual(new Set(ranges.flatMap(([start, end]) => rangeNodes(start, end)).map(key)));
    // What the caller fetched is enough: every range hashes from it alone.
    const fetched = new Map(nodes.map((node) => [key(node), store.get(node)]));
    for (const [start, end] of ranges) expect(rangeHash(start, end, (node) => fetched.get(key(node)))).toEqual(naiveRoot(entries.slice(start, end)));
    expect(
      nodesForRanges([
        [0, 4],
        [0, 4],
        [4, 6],
        [0, 6],
      ]),
    ).toEqual([
      { level: 2, index: 0 },
      { level: 1, index: 2 },
    ]);
  });
});

describe('rangeNodes', () => {
  /** A range made of stored nodes: its start a multiple of the RFC's k for its size (rangeNodes' rule). */
  const storedRange = fc
    .oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }))
    .chain((n) => fc.integer({ min: 0, max: Math.floor((2 ** 53 - n) / kOf(n)) }).map((m): [number, number] => [m * kOf(n), m * kOf(n) + n]));

  /** That the nodes tile [start, end) left to right. */
  const tiles = (nodes: NodeRef[], start: number, end: number) => {
    let at = start;
    for (const node of nodes) {
      if (node.index * 2 ** node.level !== at) return false;
      at += 2 ** node.level;
    }
    return at === end;
  };

  it('returns a perfect aligned range as its one node', () => {
    expect(rangeNodes(8, 16)).toEqual([{ level: 3, index: 1 }]);
    expect(rangeNodes(5, 6)).toEqual([{ level: 0, index: 5 }]);
    expect(rangeNodes(0, 2 ** 53)).toEqual([{ level: 53, index: 0 }]);
  });

  it('splits as the RFC does: the left part whole, the right part split again', () => {
    expect(rangeNodes(0, 7)).toEqual([
      { level: 2, index: 0 },
      { level: 1, index: 2 },
      { level: 0, index: 6 },
    ]);
    expect(rangeNodes(4, 7)).toEqual([
      { level: 1, index: 2 },
      { level: 0, index: 6 },
    ]);
    // Size 4 starting at a multiple of 2 but not 4: D[2:4] and D[4:6], no node of level 2.
    expect(rangeNodes(2, 6)).toEqual([
      { level: 1, index: 1 },
      { level: 1, index: 2 },
    ]);
  });

  it('returns at most 2 * ceil(log2(n)) + 1 nodes that tile the range, for random ranges of stored nodes', () => {
    fc.assert(
      fc.property(storedRange, ([start, end]) => {
        const nodes = rangeNodes(start, end);
        const n = end - start;
        return nodes.length <= 2 * ceilLog2(n) + 1 && nodes.length <= Math.floor(Math.log2(n)) + 1 && tiles(nodes, start, end);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses with a RangeError a random range whose MTH no stored nodes make, and bounds the others', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), fc.maxSafeNat(), (a, b) => {
        const [start, end] = a < b ? [a, b] : [b, a + 1];
        if (start % kOf(end - start) !== 0) return throwsRangeError(() => rangeNodes(start, end));
        const nodes = rangeNodes(start, end);
        return nodes.length <= 2 * ceilLog2(end - start) + 1 && tiles(nodes, start, end);
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts every range of random proofs in trees of up to 2^53 - 1 leaves', () => {
    const tree = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }).chain((size) => fc.tuple(fc.constant(size), fc.integer({ min: 0, max: size - 1 })));
    fc.assert(
      fc.property(tree, ([size, index]) => {
        const inclusion = inclusionProofRanges(index, size);
        const consistency = consistencyProofRanges(index + 1, size);
        const nodes = nodesForRanges([...inclusion, ...consistency, [0, size]]);
        return inclusion.length <= ceilLog2(size) && consistency.length <= ceilLog2(size) + 1 && nodes.every((node) => Number.isSafeInteger(node.index));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('rangeHash', () => {
  const store = new NodeStore(LEAF_INPUTS);

  it('names the node the lookup lacks', () => {
    expect(() => rangeHash(0, 8, store.lookupAt(7))).toThrow('Merkle tree node (level 3, index 0) is missing, and MTH(D[0:8]) needs it');
  });

  it('lets what the lookup throws through', () => {
    const failure = new Error('the database is gone');
    expect(() =>
      rangeHash(0, 3, () => {
        throw failure;
      }),
    ).toThrow(failure);
  });

  it('refuses a stored value that is not a 32-byte hash', () => {
    expect(() => rangeHash(0, 1, () => Buffer.alloc(31))).toThrow('Merkle tree node (level 0, index 0) is not a 32-byte hash');
  });
});

describe('invalid arguments', () => {
  it.each([
    ['rangeNodes(-1, 2)', () => rangeNodes(-1, 2)],
    ['rangeNodes(2, 2)', () => rangeNodes(2, 2)],
    ['rangeNodes(3, 2)', () => rangeNodes(3, 2)],
    ['rangeNodes(0.5, 2)', () => rangeNodes(0.5, 2)],
    ['rangeNodes(0, NaN)', () => rangeNodes(0, NaN)],
    ['rangeNodes(0, 2^53 + 2)', () => rangeNodes(0, 2 ** 53 + 2)],
    ['rangeNodes(1, 5), whose D[1:3] no node holds', () => rangeNodes(1, 5)],
    ['rangeHash(1, 1)', () => rangeHash(1, 1, () => EMPTY_ROOT)],
    ['nodesForRanges([[0, 0]])', () => nodesForRanges([[0, 0]])],
    ['nodesCompletedBy(-1)', () => nodesCompletedBy(-1)],
    ['nodesCompletedBy(1.5)', () => nodesCompletedBy(1.5)],
    ['nodesCompletedBy(2^53)', () => nodesCompletedBy(2 ** 53)],
    ['inclusionProofRanges(0, 0)', () => inclusionProofRanges(0, 0)],
    ['inclusionProofRanges(5, 5)', () => inclusionProofRanges(5, 5)],
    ['inclusionProofRanges(-1, 5)', () => inclusionProofRanges(-1, 5)],
    ['inclusionProofRanges(0, 2.5)', () => inclusionProofRanges(0, 2.5)],
    ['inclusionProofRanges(0, 2^53 + 2)', () => inclusionProofRanges(0, 2 ** 53 + 2)],
    ['consistencyProofRanges(0, 5)', () => consistencyProofRanges(0, 5)],
    ['consistencyProofRanges(6, 5)', () => consistencyProofRanges(6, 5)],
    ['consistencyProofRanges(1.5, 5)', () => consistencyProofRanges(1.5, 5)],
    ['consistencyProofRanges(1, Infinity)', () => consistencyProofRanges(1, Infinity)],
  ])('%s throws a RangeError', (_name, call) => {
    expect(call).toThrow(RangeError);
  });

  it('accept the ends of the range of sizes', () => {
    expect(inclusionProofRanges(2 ** 53 - 1, 2 ** 53)).toEqual(Array.from({ length: 53 }, (_, level) => [2 ** 53 - 2 ** (level + 1), 2 ** 53 - 2 ** level]));
    expect(consistencyProofRanges(2 ** 52, 2 ** 53)).toEqual([[2 ** 52, 2 ** 53]]);
    expect(consistencyProofRanges(3, 3)).toEqual([]);
  });
});

describe('verification', () => {
  const store = new NodeStore(LEAF_INPUTS);
  const leaf = leafHash(LEAF_INPUTS[5]);
  const proof = INCLUSION_PROOFS[2].proof.map(hex);
  const root = ROOT_HASHES[8];
  const consistency = CONSISTENCY_PROOFS[2].proof.map(hex);

  it('of a tree against itself needs an empty proof and equal roots', () => {
    expect(verifyConsistency(5, 5, [], ROOT_HASHES[5], ROOT_HASHES[5])).toBe(true);
    expect(verifyConsistency(5, 5, [ROOT_HASHES[5]], ROOT_HASHES[5], ROOT_HASHES[5])).toBe(false);
    expect(verifyConsistency(5, 5, [], ROOT_HASHES[5], ROOT_HASHES[6])).toBe(false);
    expect(verifyConsistency(1, 8, [], ROOT_HASHES[1], ROOT_HASHES[8])).toBe(false);
  });

  it.each([
    ['a negative index', () => verifyInclusion(leaf, -1, 8, proof, root)],
    ['a fractional index', () => verifyInclusion(leaf, 5.5, 8, proof, root)],
    ['an index of 2^60', () => verifyInclusion(leaf, 2 ** 60, 8, proof, root)],
    ['size 0', () => verifyInclusion(leaf, 0, 0, [], EMPTY_ROOT)],
    ['size NaN', () => verifyInclusion(leaf, 5, NaN, proof, root)],
    ['a leaf that is not a Buffer', () => verifyInclusion('leaf' as unknown as Buffer, 5, 8, proof, root)],
    ['a short leaf hash', () => verifyInclusion(leaf.subarray(1), 5, 8, proof, root)],
    ['a proof that is not an array', () => verifyInclusion(leaf, 5, 8, null as unknown as Buffer[], root)],
    ['a proof with a string in it', () => verifyInclusion(leaf, 5, 8, [...proof.slice(0, 2), 'x'] as unknown as Buffer[], root)],
    ['a root that is not a Buffer', () => verifyInclusion(leaf, 5, 8, proof, undefined as unknown as Buffer)],
    ['from 0', () => verifyConsistency(0, 8, consistency, EMPTY_ROOT, root)],
    ['from > to', () => verifyConsistency(8, 6, consistency, root, ROOT_HASHES[6])],
    ['to Infinity', () => verifyConsistency(6, Infinity, consistency, ROOT_HASHES[6], root)],
    ['a consistency proof with an empty hash in it', () => verifyConsistency(6, 8, [...consistency, Buffer.alloc(0)], ROOT_HASHES[6], root)],
    ['an old root that is not a Buffer', () => verifyConsistency(6, 8, consistency, 42 as unknown as Buffer, root)],
  ])('refuses %s without throwing', (_name, call) => {
    expect(call).not.toThrow();
    expect(call()).toBe(false);
  });

  it('accepts what the same arguments, well formed, prove', () => {
    expect(verifyInclusion(leaf, 5, 8, proof, root)).toBe(true);
    expect(verifyConsistency(6, 8, consistency, ROOT_HASHES[6], rangeHash(0, 8, store.lookupAt(8)))).toBe(true);
  });
});
