/** What the generated-client journey saw; kept apart from journey.ts, which needs the generated types. */
export interface JourneyResult {
  source: string;
  created: { status: number; location: string | null; replayed: string | null; id: string };
  replay: { status: number; location: string | null; replayed: string | null; id: string };
  listedIds: string[];
  feed: { types: string[]; documentIds: string[]; nextCursor: string | null; hasMore: boolean };
  missing: { status: number; code: string };
}

export type RunJourney = (baseUrl: string, adminToken: string, source: string, fetch?: (request: Request) => Promise<Response>) => Promise<JourneyResult>;
