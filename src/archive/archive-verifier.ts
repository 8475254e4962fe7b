import { Injectable } from '@nestjs/common';
import canonicalize from 'canonicalize';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { open, readFile, rename, writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { AppError } from '../common/app-error.js';
import { AppConfig } from '../config/app-config.js';
import { parseIsoDuration, shortestSeconds } from '../config/iso-duration.js';
import { onlyPaymentProgress } from '../documents/document-history.js';
import { DocumentHistoryService, FEED_START } from '../documents/document-history.service.js';
import { ArchiveCheck, digestOf, Finding } from './archive-check.js';
import type { ArchiveCheckpointEntity } from './archive-checkpoint.entity.js';
import { parseEntry } from './archive-entry.js';
import { ArchiveRepository } from './archive.repository.js';

/** Rows per read while the verifier walks a table. */
const PAGE = 1000;
/** Findings kept in the verification's record (all are counted, and all printed by the CLI). */
const RECORDED_FINDINGS = 100;
/** What an export file's first line says it is. */
export const EXPORT_FORMAT = 'tdg-archive-export/1';

export interface VerificationReport {
  treeSize: number;
  checkpoints: number;
  findings: Finding[];
  /** The newest checkpoint that verified, when nothing was found before it: keep it for the next run. */
  newestVerified: string | null;
}

/**
 * `tdg archive verify` (docs/archive.md, "Verifying"): every entry against the tree and every checkpoint
 * against the entries and the archive's key; on the database also every feed event against its entry,
 * every document's row against its latest entry, and no event left unsealed past the seal interval.
 */
@Injectable()
export class ArchiveVerifier {
  /** How old an event or change must be to count as unsealed: the seal interval, and a margin for a busy sealer. */
  private readonly sealedWithinMs: number;
  private readonly feedRetentionMs: number;

  constructor(
    private readonly archive: ArchiveRepository,
    private readonly history: DocumentHistoryService,
    config: AppConfig,
  ) {
    this.sealedWithinMs = shortestSeconds(parseIsoDuration(config.ARCHIVE_SEAL_INTERVAL)!) * 1000 + 10_000;
    this.feedRetentionMs = shortestSeconds(parseIsoDuration(config.RETENTION_EVENTS)!) * 1000;
  }

  /** Verifies the archive in the database against `verifierKey` (and a checkpoint kept from before, if any) and records the run. */
  async verifyDatabase(verifierKey: string, kept: string | null = null): Promise<VerificationReport> {
    const startedAt = new Date();
    const treeSize = await this.archive.size();
    const check = new ArchiveCheck(verifierKey);
    if (kept) check.expectTree(kept);
    // The feed as it is now, by event id: what each entry's event is compared with, and what no entry took is unsealed.
    const feed = new Map<string, { digest: string; createdAt: number; documentId: string }>();
    for (let position = FEED_START; ;) {
      const records = await this.history.after(position, PAGE);
      for (const { event } of records) feed.set(event.id, { digest: digestOf(event), createdAt: Date.parse(event.createdAt), documentId: event.documentId });
      if (records.length < PAGE) break;
      position = records[records.length - 1].position;
    }
    // Retention may have purged, while the feed was read, events up to RETENTION_EVENTS before the read's end.
    const feedKeptSince = Date.now() - this.feedRetentionMs;
    const checkpoints = this.checkpointsInOrder();
    let next = await checkpoints.next();
    let checked = 0;
    for (let from = 0; from < treeSize; from += PAGE) {
      const [rows, leaves] = await Promise.all([this.archive.entriesFrom(from, PAGE), this.archive.leavesFrom(from, PAGE)]);
      const leafOf = new Map(leaves.map((leaf) => [Number(leaf.index), leaf.hash]));
      for (const row of rows) {
        const index = Number(row.index);
        if (index >= treeSize) break;
        while (!next.done && Number(next.value.treeSize) === check.treeSize && check.treeSize > 0) {
          check.checkpoint(Number(next.value.treeSize), next.value.note);
          checked++;
          next = await checkpoints.next();
        }
        const entry = check.entry(index, row.entry, leafOf.get(index) ?? Buffer.alloc(0));
        if (!entry) continue;
        // The columns a document's archive answer and sealing's position are read by, against the text they came from.
        if (row.eventId !== entry.event.id || row.documentId !== entry.document.id || row.source !== entry.document.source) {
          check.find('entry_malformed', entry.document.id, index, "the entry's stored event, document or source is not its text's");
        }
        const inFeed = feed.get(entry.event.id);
        feed.delete(entry.event.id);
        if (inFeed && inFeed.digest !== digestOf(entry.event))
          check.find('feed_event_changed', entry.document.id, index, `feed event ${entry.event.id} is not the event sealed`);
        if (!inFeed && Date.parse(entry.event.createdAt) > feedKeptSince) {
          check.find('feed_event_deleted', entry.document.id, index, `feed event ${entry.event.id} is gone from the feed before its retention period ended`);
        }
      }
      if (rows.length < PAGE) break;
    }
    // A checkpoint beyond the entries walked was signed by a seal during this run, unless the entries it covers
    // are not there now either: then they were removed (a log cut short).
    const sizeNow = await this.archive.size();
    for (; !next.done; next = await checkpoints.next()) {
      const size = Number(next.value.treeSize);
      if (size > treeSize && size <= sizeNow) continue;
      check.checkpoint(size, next.value.note);
      checked++;
    }
    const sealedBy = startedAt.getTime() - this.sealedWithinMs;
    const unsealedDocuments = new Set<string>();
    for (const [eventId, event] of feed) {
      unsealedDocuments.add(event.documentId);
      if (event.createdAt < sealedBy) check.find('feed_event_unsealed', event.documentId, null, `feed event ${eventId} is not sealed`);
    }
    await this.checkDocuments(check, sealedBy, unsealedDocuments);
    check.finish();
    const report = { treeSize, checkpoints: checked, findings: check.findings, newestVerified: check.newestVerified };
    await this.archive.recordVerification({
      startedAt,
      finishedAt: new Date(),
      treeSize: String(treeSize),
      findingCount: report.findings.length,
      findings: report.findings.slice(0, RECORDED_FINDINGS),
    });
    return report;
  }

  /** Writes the whole archive into one JSON Lines file: a header, then each entry, each checkpoint right after the entry that completes its tree. */
  async export(file: string, verifierKey: string, origin: string): Promise<{ treeSize: number; checkpoints: number }> {
    // Opened before anything is read: an existing file is never overwritten, and says so as a refusal.
    const handle = await open(file, 'wx', 0o600).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'EEXIST') throw AppError.validation([{ field: 'file', message: 'exists already: the export writes a new file' }]);
      throw error;
    });
    const out = handle.createWriteStream();
    const write = async (line: unknown) => {
      if (!out.write(`${canonicalize(line)}\n`)) await once(out, 'drain');
    };
    const treeSize = await this.archive.size();
    let checkpoints = 0;
    try {
      await write({ format: EXPORT_FORMAT, origin, verifierKey, treeSize, exportedAt: new Date().toISOString() });
      const stored = this.checkpointsInOrder();
      let next = await stored.next();
      const flushCheckpoints = async (size: number) => {
        for (; !next.done && Number(next.value.treeSize) <= size; next = await stored.next()) {
          await write({ checkpoint: { treeSize: Number(next.value.treeSize), note: next.value.note } });
          checkpoints++;
        }
      };
      for (let from = 0; from < treeSize; from += PAGE) {
        for (const row of await this.archive.entriesFrom(from, Math.min(PAGE, treeSize - from))) {
          await write({ index: Number(row.index), entry: row.entry });
          await flushCheckpoints(Number(row.index) + 1);
        }
      }
      await flushCheckpoints(treeSize);
    } finally {
      out.end();
      await once(out, 'close');
    }
    return { treeSize, checkpoints };
  }

  /** Verifies an export file with no database, against `verifierKey` (by default the one the file names, which the operator must compare with the key they trust). */
  static async verifyFile(file: string, verifierKey?: string, kept: string | null = null): Promise<VerificationReport & { verifierKey: string }> {
    const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
    let check: ArchiveCheck | null = null;
    let key = verifierKey ?? '';
    let checkpoints = 0;
    let declaredSize = 0;
    let number = 0;
    for await (const line of lines) {
      number++;
      const value = JSON.parse(line) as Record<string, unknown>;
      if (!check) {
        if (value.format !== EXPORT_FORMAT) throw new Error(`${file} is not an archive export (${EXPORT_FORMAT})`);
        key = verifierKey ?? String(value.verifierKey);
        declaredSize = Number(value.treeSize);
        check = new ArchiveCheck(key);
        if (kept) check.expectTree(kept);
        if (verifierKey && value.verifierKey !== verifierKey) {
          check.find('checkpoint_signature', null, null, 'the export names another verifier key than the one given');
        }
        continue;
      }
      if (typeof value.entry === 'string' && typeof value.index === 'number') check.entry(value.index, value.entry);
      else if (value.checkpoint && typeof value.checkpoint === 'object') {
        const { treeSize, note } = value.checkpoint as { treeSize: number; note: string };
        check.checkpoint(treeSize, note);
        checkpoints++;
      } else throw new Error(`${file}, line ${number}: neither an entry nor a checkpoint`);
    }
    if (!check) throw new Error(`${file} is empty`);
    check.finish();
    if (check.treeSize !== declaredSize)
      check.find('entry_out_of_place', null, check.treeSize, `the export declares ${declaredSize} entries and holds ${check.treeSize}`);
    return { treeSize: check.treeSize, checkpoints, findings: check.findings, newestVerified: check.newestVerified, verifierKey: key };
  }

  /**
   * Every document's row against its newest entry. A document changed within the seal interval, or with a
   * feed event not sealed yet (already named as unsealed when it is late), is left to the next run: its newest
   * entry is not its newest change.
   */
  private async checkDocuments(check: ArchiveCheck, sealedBy: number, unsealed: ReadonlySet<string>): Promise<void> {
    for (let after = '0'; ;) {
      const { documents, last } = await this.history.current(after, PAGE);
      const latest = new Map((await this.archive.latestOfDocuments(documents.map((d) => d.id))).map((row) => [row.documentId, row]));
      for (const document of documents) {
        if (Date.parse(document.updatedAt) >= sealedBy || unsealed.has(document.id)) continue;
        const row = latest.get(document.id);
        const archived = row ? parseEntry(row.entry) : null;
        if (!row || !archived) {
          // Last changed before the archive's first entry, with its events purged since: older than the archive.
          const predates = check.firstEventAt === null || Date.parse(document.updatedAt) < check.firstEventAt;
          if (!predates || row) check.find('document_unsealed', document.id, null, 'the document has no entry in the archive');
          continue;
        }
        if (canonicalize(document) !== canonicalize(archived.document) && !onlyPaymentProgress(document, archived.document)) {
          check.find(
            'document_changed',
            document.id,
            Number(row.index),
            `the document differs from its latest entry: ${differences(document, archived.document)}`,
          );
        }
      }
      if (!last || documents.length < PAGE) return;
      after = last;
    }
  }

  private async *checkpointsInOrder(): AsyncGenerator<ArchiveCheckpointEntity> {
    for (let after = 0; ;) {
      const page = await this.archive.checkpointsAfter(after, PAGE);
      yield* page;
      if (page.length < PAGE) return;
      after = Number(page[page.length - 1].treeSize);
    }
  }
}

/**
 * `--state FILE` of a scheduled `tdg archive verify`: the checkpoint the last clean run verified, which the
 * next run requires the log to still hold (null before the first run), and keeping the newest for the next.
 */
export const verificationState = {
  async read(file: string): Promise<string | null> {
    const note = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    return note?.trim() ? note : null;
  },
  async keep(file: string, report: VerificationReport): Promise<void> {
    if (report.findings.length > 0 || !report.newestVerified) return;
    await writeFile(`${file}.new`, report.newestVerified, { mode: 0o644 });
    await rename(`${file}.new`, file);
  },
};

/** The top-level fields in which two documents differ, by name (never their values: the finding is logged). */
function differences(current: object, archived: object): string {
  const a = current as Record<string, unknown>;
  const b = archived as Record<string, unknown>;
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((key) => canonicalize(a[key]) !== canonicalize(b[key])).join(', ');
}
