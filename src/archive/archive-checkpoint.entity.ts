import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Every checkpoint ever signed (C2SP tlog-checkpoint in a signed note), kept; append-only. */
@Entity('archive_checkpoints')
export class ArchiveCheckpointEntity {
  @PrimaryColumn({ name: 'tree_size', type: 'bigint' })
  treeSize: string;

  @Column({ name: 'root_hash', type: 'bytea' })
  rootHash: Buffer;

  /** The signed note exactly as served. */
  @Column({ type: 'text' })
  note: string;

  /** The note verifier key of the key that signed it (`<name>+<key id>+<key>`). */
  @Column({ name: 'verifier_key', type: 'varchar', length: 300 })
  verifierKey: string;

  @Column({ name: 'signed_at', type: 'timestamptz' })
  signedAt: Date;
}
