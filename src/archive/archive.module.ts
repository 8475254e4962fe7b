import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DocumentsModule } from '../documents/documents.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { ArchiveCheckpointEntity } from './archive-checkpoint.entity.js';
import { ArchiveEntryEntity } from './archive-entry.entity.js';
import { ArchiveNodeEntity } from './archive-node.entity.js';
import { ArchiveSealer } from './archive-sealer.js';
import { ArchiveSigner } from './archive-signer.js';
import { ArchiveVerificationEntity } from './archive-verification.entity.js';
import { ArchiveVerifier } from './archive-verifier.js';
import { ArchiveController } from './archive.controller.js';
import { ArchiveRepository } from './archive.repository.js';
import { ArchiveService } from './archive.service.js';

/**
 * The verifiable archive (docs/archive.md): every feed event sealed into an append-only RFC 9162 Merkle
 * tree with signed checkpoints, proofs for clients, and the verifier operators run.
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([ArchiveEntryEntity, ArchiveNodeEntity, ArchiveCheckpointEntity, ArchiveVerificationEntity]),
    DocumentsModule,
    MetricsModule,
  ],
  controllers: [ArchiveController],
  providers: [ArchiveRepository, ArchiveSigner, ArchiveSealer, ArchiveService, ArchiveVerifier],
  exports: [ArchiveService, ArchiveVerifier],
})
export class ArchiveModule {}
