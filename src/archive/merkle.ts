import { createHash } from 'node:crypto';

/**
 * The Merkle tree arithmetic of RFC 9162 section 2.1 for the archive's append-only log, pure (no I/O).
 *
 * Storage model: every perfect, aligned subtree is stored as a node (level, index) covering the leaves
 * [index * 2^level, (index + 1) * 2^level); level 0 holds the leaf hashes. A node never changes once its last
 * leaf is appended, so the store only grows. Everything a log answers (a root, an inclusion proof, a
 * consistency proof) is a list of MTH(D[start:end]) of ranges (section 2.1.3.1, 2.1.4.1), and each of those
 * ranges is a node or a short chain of nodes (rangeNodes): a caller lists the ranges, fetches their nodes in
 * one query (nodesForRanges) and hashes them (rangeHash).
 *
 * Sizes and indexes are JS numbers. Bitwise operators would truncate them to 32 bits, so this halves and
 * tests parity with arithmetic; every value stays an integer no larger than 2^53, all exact in a double.
 */

/** A stored node: the perfect subtree of 2^level leaves starting at leaf index * 2^level. */
export interface NodeRef {
  level: number;
  index: number;
}

/** The largest tree size (and range end) accepted: all integers up to it are exact in a double. */
const MAX_SIZE = 2 ** 53;
/** The length of a SHA-256 hash, the only hash this log uses (RFC 9162 section 2.1.1 with SHA-256). */
const HASH_LENGTH = 32;

/** The leaf hash of an entry, RFC 9162 section 2.1.1: SHA-256(0x00 || entry); a string is hashed as UTF-8. */
export function leafHash(entry: Buffer | string): Buffer {
  return createHash('sha256')
    .update(Buffer.of(0x00))
    .update(typeof entry === 'string' ? Buffer.from(entry, 'utf8') : entry)
    .digest();
}

/** The hash of an interior node, RFC 9162 section 2.1.1: SHA-256(0x01 || left || right). */
export function nodeHash(left: Buffer, right: Buffer): Buffer {
  return createHash('sha256').update(Buffer.of(0x01)).update(left).update(right).digest();
}

/** MTH of the empty list, RFC 9162 section 2.1.1: SHA-256 of nothing. Shared: do not write into it. */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

/** floor(x / 2): a right shift by one that keeps all 53 bits. */
function half(x: number): number {
  return Math.floor(x / 2);
}

function isOdd(x: number): boolean {
  return x % 2 === 1;
}

/** floor(log2(n)) for n >= 1, counted rather than taken from Math.log2, whose rounding near 2^53 could be off by one. */
function floorLog2(n: number): number {
  let level = 0;
  for (let width = 2; width <= n; width *= 2) level++;
  return level;
}

/** The RFC's k for a list of n >= 2 entries: the largest power of two smaller than n (section 2.1.1), and its log2. */
function split(n: number): { k: number; level: number } {
  const level = floorLog2(n - 1);
  return { k: 2 ** level, level };
}

function isCount(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= MAX_SIZE;
}

function checkCount(name: string, value: number, min: number, max = MAX_SIZE): void {
  if (!isCount(value, min) || value > max) throw new RangeError(`${name} must be an integer from ${min} to ${max}, not ${String(value)}`);
}

function isHash(value: unknown): value is Buffer {
  return Buffer.isBuffer(value) && value.length === HASH_LENGTH;
}

function isHashList(value: unknown): value is readonly Buffer[] {
  return Array.isArray(value) && value.every(isHash);
}

/**
 * The nodes (level >= 1) that appending the leaf with 0-based index `leafIndex` completes, lowest level first,
 * each with how to compute it: its two children. Leaf i is the last leaf of the level-L node ending at i + 1
 * for every L with 2^L dividing i + 1; the level-0 node (the leaf hash itself) is the caller's to store.
 */
export function nodesCompletedBy(leafIndex: number): Array<NodeRef & { left: NodeRef; right: NodeRef }> {
  checkCount('leafIndex', leafIndex, 0, MAX_SIZE - 1);
  const completed: Array<NodeRef & { left: NodeRef; right: NodeRef }> = [];
  const size = leafIndex + 1;
  for (let level = 1, width = 2; size % width === 0; level++, width *= 2) {
    const index = size / width - 1;
    completed.push({ level, index, left: { level: level - 1, index: 2 * index }, right: { level: level - 1, index: 2 * index + 1 } });
  }
  return completed;
}

/**
 * The stored nodes from which MTH(D[start:end]) is computed (the RFC's recursive split, k = largest power of
 * two < n), left to right; MTH is their right fold: H(first, H(second, ... last)).
 *
 * RFC 9162 section 2.1.1 hashes D[start:end] as a list of its own, so its split points are start + k, not
 * multiples of k: for an arbitrary start the left halves are not aligned, no node stores them, and MTH(D[1:1+2^m])
 * needs all 2^m leaves. So this requires start to be a multiple of k (any start for one leaf), which every range
 * a root or a proof asks for meets: each is a subtree of the RFC's tree of some size.
 * Then the left part D[start:start+k] is one node and the right part, no larger than k, starts at a multiple of
 * its own k: at most floor(log2(n)) + 1 nodes.
 */
export function rangeNodes(start: number, end: number): NodeRef[] {
  checkCount('start', start, 0, MAX_SIZE - 1);
  checkCount('end', end, start + 1);
  const { k: first } = split(end - start);
  if (end - start > 1 && start % first !== 0) {
    throw new RangeError(
      `MTH(D[${start}:${end}]) is not made of stored nodes: its start must be a multiple of ${first}, the largest power of two below its size`,
    );
  }
  const nodes: NodeRef[] = [];
  let lo = start;
  for (;;) {
    const n = end - lo;
    const level = floorLog2(n);
    if (2 ** level === n && lo % n === 0) {
      // A perfect, aligned subtree: stored whole.
      nodes.push({ level, index: lo / n });
      return nodes;
    }
    const { k, level: kLevel } = split(n);
    nodes.push({ level: kLevel, index: lo / k });
    lo += k;
  }
}

/**
 * MTH(D[start:end]) from stored node hashes. `lookup` returns a node's hash, or throws or returns undefined for
 * a node it lacks (undefined is reported as an Error naming the node; what lookup throws goes through as is).
 */
export function rangeHash(start: number, end: number, lookup: (node: NodeRef) => Buffer | undefined): Buffer {
  const hashes = rangeNodes(start, end).map((node) => {
    const hash = lookup(node);
    if (hash === undefined) throw new Error(`Merkle tree node (level ${node.level}, index ${node.index}) is missing, and MTH(D[${start}:${end}]) needs it`);
    if (!isHash(hash)) throw new Error(`Merkle tree node (level ${node.level}, index ${node.index}) is not a ${HASH_LENGTH}-byte hash`);
    return hash;
  });
  // The nodes are the left parts of successive splits, the last one the innermost right part (rangeNodes).
  let hash = hashes[hashes.length - 1];
  for (let i = hashes.length - 2; i >= 0; i--) hash = nodeHash(hashes[i], hash);
  return hash;
}

/**
 * The ranges [start, end) whose hashes, in order, form the inclusion proof of leaf `index` in a tree of `size`
 * (RFC 9162 section 2.1.3.1 PATH), from the leaf's sibling up to the root's other child.
 */
export function inclusionProofRanges(index: number, size: number): Array<[number, number]> {
  checkCount('size', size, 1);
  checkCount('index', index, 0, size - 1);
  // PATH(m, D[lo:hi]) = PATH(m, D[lo:lo+k]) : MTH(D[lo+k:hi]) if m < lo + k, else PATH(m, D[lo+k:hi]) : MTH(D[lo:lo+k]).
  // Walking down from the root finds the siblings top first; the proof lists them bottom first.
  const siblings: Array<[number, number]> = [];
  let lo = 0;
  let hi = size;
  while (hi - lo > 1) {
    const { k } = split(hi - lo);
    if (index < lo + k) {
      siblings.push([lo + k, hi]);
      hi = lo + k;
    } else {
      siblings.push([lo, lo + k]);
      lo += k;
    }
  }
  return siblings.reverse();
}

/**
 * The ranges whose hashes, in order, form the consistency proof from tree size `from` to `to` (RFC 9162
 * section 2.1.4.1 PROOF / SUBPROOF), 0 < from <= to. from === to gives [].
 */
export function consistencyProofRanges(from: number, to: number): Array<[number, number]> {
  checkCount('to', to, 1);
  checkCount('from', from, 1, to);
  // SUBPROOF(m, D[lo:hi], b), m counted from lo: when m = hi - lo, nothing if b (the verifier has MTH(D[0:from])
  // already) else MTH(D[lo:hi]); otherwise, with k the split, SUBPROOF(m, D[lo:lo+k], b) : MTH(D[lo+k:hi]) if
  // m <= k, else SUBPROOF(m - k, D[lo+k:hi], false) : MTH(D[lo:lo+k]). Found top first, listed bottom first.
  const ranges: Array<[number, number]> = [];
  let lo = 0;
  let hi = to;
  let m = from;
  let b = true;
  while (m !== hi - lo) {
    const { k } = split(hi - lo);
    if (m <= k) {
      ranges.push([lo + k, hi]);
      hi = lo + k;
    } else {
      ranges.push([lo, lo + k]);
      lo += k;
      m -= k;
      b = false;
    }
  }
  if (!b) ranges.push([lo, hi]);
  return ranges.reverse();
}

/** Every stored node needed to answer a list of ranges, deduplicated (first appearance kept): so a caller fetches them in one query. */
export function nodesForRanges(ranges: ReadonlyArray<[number, number]>): NodeRef[] {
  const seen = new Map<string, NodeRef>();
  for (const [start, end] of ranges) {
    for (const node of rangeNodes(start, end)) {
      const key = `${node.level}:${node.index}`;
      if (!seen.has(key)) seen.set(key, node);
    }
  }
  return [...seen.values()];
}

/**
 * Whether `proof` proves the leaf whose leaf hash (leafHash(entry), not the entry) is `leaf` to be leaf `index`
 * of the tree of `size` with root `root`, as a client verifies it (RFC 9162 section 2.1.3.2). False, never an
 * exception, for anything malformed: an index outside the tree, a hash that is not 32 bytes, a proof of the
 * wrong length.
 */
export function verifyInclusion(leaf: Buffer, index: number, size: number, proof: readonly Buffer[], root: Buffer): boolean {
  if (!isHash(leaf) || !isHash(root) || !isHashList(proof) || !isCount(size, 1) || !isCount(index, 0) || index >= size) return false;
  // fn is the node's index at the current level and sn the last index there; the path ends at the root, sn = 0.
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false; // More proof than levels.
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r);
      // A last node with an even index has no right sibling on the levels where it is promoted unchanged
      // (section 2.1.1's unbalanced right edge): skip them, step 4.b.ii.
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && r.equals(root);
}

/**
 * Whether `proof` proves the tree of size `from` with root `fromRoot` to be a prefix of the tree of size `to`
 * with root `toRoot`, as a client verifies it (RFC 9162 section 2.1.4.2). from === to is consistent iff the
 * proof is empty and the roots are equal. False, never an exception, for anything malformed.
 */
export function verifyConsistency(from: number, to: number, proof: readonly Buffer[], fromRoot: Buffer, toRoot: Buffer): boolean {
  if (!isHash(fromRoot) || !isHash(toRoot) || !isHashList(proof) || !isCount(from, 1) || !isCount(to, 1) || from > to) return false;
  if (from === to) return proof.length === 0 && fromRoot.equals(toRoot);
  if (proof.length === 0) return false; // Step 1.
  // Step 2: when from is a power of two, MTH(D[0:from]) is a node of the new tree and the proof leaves it out.
  const path = 2 ** floorLog2(from) === from ? [fromRoot, ...proof] : proof;
  // Step 3 and 4: start at the last leaf of the old tree, moved up past the levels where it is a right child
  // whose whole subtree the old tree holds (the subtree path[0] hashes).
  let fn = from - 1;
  let sn = to - 1;
  while (isOdd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  // Step 5 and 6: fr rebuilds the old root, sr the new one, from the same path.
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      // Step 6.b.iii, as in verifyInclusion.
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      // A right sibling is not in the old tree: it goes into the new root only.
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  // Step 7.
  return sn === 0 && fr.equals(fromRoot) && sr.equals(toRoot);
}
