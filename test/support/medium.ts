import { ModuleMetadata, Provider } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig, loadConfig } from '../../src/config/app-config.js';
import { DatabaseModule, requestPool } from '../../src/database/database.module.js';
import { Transactions } from '../../src/database/transaction.js';
import { created, DocumentFields, DocumentRecord, NewDocumentEvent } from '../../src/documents/document-changes.js';
import { createTestDatabase, dropTestDatabase } from './database.js';

export interface Medium {
  moduleRef: TestingModule;
  dataSource: DataSource;
  /** DatabaseModule's Transactions (the module is global): the one place transactions are opened. */
  transactions: Transactions;
  url: string;
  /** A connection of the test's own, for setting up and checking rows. */
  check: Client;
  close(): Promise<void>;
}

export interface MediumOptions {
  /** The entities the subjects' module registers (TypeOrmModule.forFeature). */
  entities?: Parameters<typeof TypeOrmModule.forFeature>[0];
  providers?: Provider[];
  imports?: ModuleMetadata['imports'];
  /** The request pool's settings beyond the defaults (its size, its bounds). */
  config?: Record<string, string>;
}

/**
 * The medium tier: subjects built by Nest (`Test.createTestingModule`) with the application's own
 * DatabaseModule, that is TypeORM through @nestjs/typeorm, on a fresh database of the test server with
 * the real migrations run at start, as the gateway runs them.
 */
export async function mediumModule({ entities = [], providers = [], imports = [], config = {} }: MediumOptions): Promise<Medium> {
  const url = await createTestDatabase();
  const appConfig: AppConfig = loadConfig({ DATABASE_URL: url, DB_POOL_SIZE: '4', ...config });
  let moduleRef: TestingModule;
  try {
    moduleRef = await Test.createTestingModule({
      imports: [DatabaseModule.forRoot({ config: appConfig, url, pool: requestPool(appConfig) }), TypeOrmModule.forFeature(entities), ...imports],
      providers: [{ provide: AppConfig, useValue: appConfig }, ...providers],
    }).compile();
  } catch (error) {
    await dropTestDatabase(url);
    throw error;
  }
  const check = new Client({ connectionString: url });
  // A test may stop the server or end this connection's session on purpose.
  check.on('error', () => undefined);
  await check.connect();
  return {
    moduleRef,
    dataSource: moduleRef.get<DataSource>(getDataSourceToken()),
    transactions: moduleRef.get(Transactions),
    url,
    check,
    close: async () => {
      await check.end().catch(() => undefined);
      await moduleRef.close();
      await dropTestDatabase(url);
    },
  };
}

let made = 0;

/**
 * A create's fields, unique by externalId; `overrides` as the test needs. The values are canonical, as
 * the create body's transforms make them, so the record made from them is what a read gives back.
 */
export function documentFields(overrides: Partial<DocumentFields> = {}): DocumentFields {
  made += 1;
  return {
    source: 'acme-erp',
    externalId: `INV-${made}-${Date.now()}`,
    type: 'INVOICE',
    taxpayerTaxId: 'DE1',
    taxpayerName: 'Muster GmbH',
    taxpayerCountry: 'DE',
    issueDate: '2026-11-20',
    currency: 'EUR',
    totalAmount: '119.00',
    taxAmount: '19.00',
    providerReference: null,
    metadata: { zz: 'last', a: 'first' },
    traceParent: null,
    ...overrides,
  };
}

/** A new document and its `document.created` event, complete before they are written, as a create makes them (document-changes.ts). */
export function newDocumentWithEvent(overrides: Partial<DocumentFields> = {}): { document: DocumentRecord; event: NewDocumentEvent } {
  return created(documentFields(overrides), new Date());
}

/** A new document as DocumentsRepository.insert takes it. */
export function newDocument(overrides: Partial<DocumentFields> = {}): DocumentRecord {
  return newDocumentWithEvent(overrides).document;
}
