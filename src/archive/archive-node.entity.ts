import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Every perfect subtree of the archive's tree (merkle.ts): level 0 holds the leaf hashes, level L the
 * hash of leaves [index·2^L, (index+1)·2^L). Any root or proof is made of O(log n) of them, read at once.
 * Append-only, like the entries.
 */
@Entity('archive_nodes')
export class ArchiveNodeEntity {
  @PrimaryColumn({ type: 'smallint' })
  level: number;

  @PrimaryColumn({ type: 'bigint' })
  index: string;

  @Column({ type: 'bytea' })
  hash: Buffer;
}
