import { Controller, Get, Header, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/authenticated-key.js';
import type { AuthenticatedKey } from '../auth/authenticated-key.js';
import { ApiProblems } from '../common/problem.dto.js';
import { ArchiveService } from './archive.service.js';
import { ConsistencyProofDto, ConsistencyQueryDto, DocumentArchiveDto, DocumentArchiveQueryDto } from './dto/archive-queries.dto.js';

/** The archive for clients (docs/archive.md): what each of them verifies on its own, offline. */
@ApiTags('archive')
@Controller('api/v1')
export class ArchiveController {
  constructor(private readonly archive: ArchiveService) {}

  @Get('archive/checkpoint')
  @Header('Content-Type', 'text/plain; charset=utf-8')
  @ApiOperation({
    operationId: 'getArchiveCheckpoint',
    summary: 'The latest signed checkpoint of the archive',
    description:
      "A C2SP tlog-checkpoint (origin, tree size, base64 root hash) in a C2SP signed note, signed with the gateway's Ed25519 key. Keep the newest one you verified, and check every newer one against it with a consistency proof. 404 before the first entry is sealed.",
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ schema: { type: 'string' }, description: 'The signed note' })
  @ApiProblems('NOT_FOUND')
  checkpoint(): Promise<string> {
    return this.archive.latestCheckpoint();
  }

  @Get('archive/public-key')
  @Header('Content-Type', 'text/plain; charset=utf-8')
  @ApiOperation({
    operationId: 'getArchivePublicKey',
    summary: "The archive's note verifier key",
    description:
      "`<name>+<key id>+<base64 key>`, as Go's golang.org/x/mod/sumdb/note and other signed-note verifiers take it. Pin it out of band: a key fetched over the same connection proves nothing.",
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ schema: { type: 'string' }, description: 'The verifier key' })
  publicKey(): Promise<string> {
    return this.archive.verifierKey();
  }

  @Get('archive/consistency')
  @ApiOperation({
    operationId: 'getArchiveConsistency',
    summary: 'A consistency proof between two tree sizes',
    description: 'RFC 9162 §2.1.4: proves the tree of size `to` extends the tree of size `from` without changing it.',
  })
  @ApiOkResponse({ type: ConsistencyProofDto })
  @ApiProblems('VALIDATION_ERROR')
  async consistency(@Query() query: ConsistencyQueryDto): Promise<ConsistencyProofDto> {
    return { proof: await this.archive.consistency(query.from, query.to) };
  }

  @Get('documents/:id/archive')
  @ApiParam({ name: 'id', description: "The document's id; anything that is not one of the source's documents is a 404" })
  @ApiOperation({
    operationId: 'getDocumentArchive',
    summary: "A document's archive entries with their proofs",
    description:
      'Every entry of the document, oldest first, each with its RFC 9162 inclusion proof against the checkpoint of `treeSize` (default: the latest). Events not sealed yet are listed with `index: null` and no proof; entries sealed after that checkpoint have no proof.',
  })
  @ApiOkResponse({ type: DocumentArchiveDto })
  @ApiProblems('VALIDATION_ERROR', 'NOT_FOUND')
  ofDocument(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string, @Query() query: DocumentArchiveQueryDto): Promise<DocumentArchiveDto> {
    return this.archive.ofDocument(key, id, query.treeSize);
  }
}
