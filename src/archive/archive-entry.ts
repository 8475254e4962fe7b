import canonicalize from 'canonicalize';
import type { DocumentEventView } from '../documents/document-events.service.js';
import type { DocumentResponseDto } from '../documents/dto/document-response.dto.js';

/** An archive entry as it is hashed (CONTRACT.md §6): the feed event, its document as the event left it, the bank event that made it. */
export interface ArchiveEntry {
  /** Null in the text shown for an event not sealed yet. */
  index: number | null;
  event: DocumentEventView;
  document: DocumentResponseDto;
  bankEventId: string | null;
}

/** The entry's RFC 8785 canonical JSON text: what the leaf hash is of, stored and served verbatim. */
export function entryText(entry: ArchiveEntry): string {
  const text = canonicalize({ index: entry.index, event: entry.event, document: entry.document, bankEventId: entry.bankEventId });
  if (text === undefined) throw new Error('An archive entry has no JSON text');
  return text;
}

/** The entry a stored text holds, or null when it is not one in canonical form (a changed text may not be). */
export function parseEntry(text: string): ArchiveEntry | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || canonicalize(value) !== text) return null;
  const entry = value as Partial<ArchiveEntry>;
  const complete =
    (entry.index === null || Number.isSafeInteger(entry.index)) &&
    typeof entry.event === 'object' &&
    entry.event !== null &&
    typeof entry.document === 'object' &&
    entry.document !== null &&
    (entry.bankEventId === null || typeof entry.bankEventId === 'string');
  return complete ? (entry as ArchiveEntry) : null;
}
