import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

const TREE_SIZE = 'must be an integer from 1 to 9007199254740991';

export class DocumentArchiveQueryDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: 'The tree size of a signed checkpoint to prove against; the latest by default' })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: TREE_SIZE })
  @Min(1, { message: TREE_SIZE })
  @Max(Number.MAX_SAFE_INTEGER, { message: TREE_SIZE })
  treeSize?: number;
}

export class ConsistencyQueryDto {
  @ApiProperty({ type: 'integer', minimum: 1, description: 'The older tree size (a checkpoint the client verified before)' })
  @Type(() => Number)
  @IsInt({ message: TREE_SIZE })
  @Min(1, { message: TREE_SIZE })
  @Max(Number.MAX_SAFE_INTEGER, { message: TREE_SIZE })
  from: number;

  @ApiProperty({ type: 'integer', minimum: 1, description: 'The newer tree size, at most the tree size of the latest checkpoint' })
  @Type(() => Number)
  @IsInt({ message: TREE_SIZE })
  @Min(1, { message: TREE_SIZE })
  @Max(Number.MAX_SAFE_INTEGER, { message: TREE_SIZE })
  to: number;
}

export class ArchivedEntryDto {
  @ApiProperty({ type: 'integer', nullable: true, description: "The entry's position in the tree; null while the event is not sealed yet" })
  index: number | null;
  @ApiProperty({ description: 'The entry: RFC 8785 canonical JSON of { index, event, document, bankEventId }, exactly as hashed' })
  entry: string;
  @ApiPropertyOptional({
    type: [String],
    description: "RFC 9162 inclusion proof (base64 hashes) against the answer's checkpoint; absent for an entry not in that tree",
  })
  inclusionProof?: string[];
}

export class DocumentArchiveDto {
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'The signed checkpoint (C2SP tlog-checkpoint signed note) the proofs are against; null before the first one',
  })
  checkpoint: string | null;
  @ApiProperty({ type: [ArchivedEntryDto] }) entries: ArchivedEntryDto[];
}

export class ConsistencyProofDto {
  @ApiProperty({ type: [String], description: 'RFC 9162 §2.1.4 consistency proof, base64 hashes' }) proof: string[];
}

export class ArchiveCheckpointSummaryDto {
  @ApiProperty({ type: 'integer' }) treeSize: number;
  @ApiProperty({ description: 'Base64 root hash' }) rootHash: string;
  @ApiProperty({ format: 'date-time' }) signedAt: string;
  @ApiProperty({ description: 'The signed note as clients get it' }) note: string;
}

export class ArchiveVerificationSummaryDto {
  @ApiProperty({ format: 'date-time' }) startedAt: string;
  @ApiProperty({ format: 'date-time' }) finishedAt: string;
  @ApiProperty({ type: 'integer', description: 'Entries verified' }) treeSize: number;
  @ApiProperty({ type: 'integer' }) findingCount: number;
  @ApiProperty({ type: 'array', items: { type: 'object' }, description: 'The first findings: { kind, documentId, index, detail }' }) findings: unknown[];
}

export class ArchiveStatusDto {
  @ApiProperty({ type: 'integer', description: 'Entries sealed' }) treeSize: number;
  @ApiProperty({ description: 'Age of the oldest feed event not sealed yet, in seconds (0 when none is waiting)' }) sealLagSeconds: number;
  @ApiProperty({ type: ArchiveCheckpointSummaryDto, nullable: true }) checkpoint: ArchiveCheckpointSummaryDto | null;
  @ApiProperty({ type: ArchiveVerificationSummaryDto, nullable: true, description: 'The last `tdg archive verify` run on the database' })
  lastVerification: ArchiveVerificationSummaryDto | null;
}
