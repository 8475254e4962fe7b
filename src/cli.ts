#!/usr/bin/env node
import 'reflect-metadata';
import { createInterface } from 'node:readline/promises';
import { runClusterCommand } from './cli/clusters.js';
import { execute, isClusterCommand, isExportCommand, mayCreateDatabase } from './cli/commands.js';
import { ArchiveVerifier, verificationState } from './archive/archive-verifier.js';
import { verification } from './cli/output.js';
import { classify, EXIT, exitCodeOf, messageOf, problemOf, UsageError } from './cli/exit-codes.js';
import { openOperatorDatabase } from './cli/operator-database.js';
import { Io, parseCommandLine } from './cli/program.js';
import { loadConfig } from './config/app-config.js';
import { loadEnvFile } from './startup/env-file.js';

/**
 * The operator CLI (`tdg`, or `node dist/cli.js`; `npm run cli --` in development): the admin REST API's
 * operations on the database directly, for scripts, bootstrap and break-glass work. Answers go to stdout,
 * diagnostics and errors to stderr; the exit codes are listed by `tdg --help` (see EXIT).
 */
let stdoutOpen = true;
let stderrOpen = true;
const io: Io = {
  out: (text) => void (stdoutOpen && process.stdout.write(text)),
  err: (text) => void (stderrOpen && process.stderr.write(text)),
};

/**
 * A reader that stops early (`tdg --help | head -3`) closes the pipe: what it did not read is not wanted.
 * The command still ends as it would have, with its own exit status; only further output is dropped. Any
 * other failure of stdout is said on stderr and fails the command.
 */
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  stdoutOpen = false;
  if (error.code === 'EPIPE') return;
  io.err(`error: cannot write to stdout (${error.code ?? error.message})\n`);
  process.exitCode = EXIT.FAILED;
});
process.stderr.on('error', () => {
  stderrOpen = false;
});

/** A question on stderr, the answer from the terminal; none when stdin is not a terminal (a script, a pipe). */
const ask = process.stdin.isTTY
  ? async (question: string) => {
      const terminal = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return await terminal.question(question);
      } finally {
        terminal.close();
      }
    }
  : null;

/** Before the parser has decided: whether the operator asked for JSON, so even a bad command line fails as problem+json. */
const asksForJson = (argv: string[]) => argv.slice(0, argv.includes('--') ? argv.indexOf('--') : undefined).includes('--json');

async function main(argv: string[]): Promise<number> {
  let json = asksForJson(argv);
  try {
    const parsed = await parseCommandLine(argv, io);
    if (parsed.kind === 'help') return EXIT.OK;
    json = parsed.json;
    // Files only: no configuration, no database.
    if (isClusterCommand(parsed.command)) return await runClusterCommand(parsed.command, { json, io, ask });
    if (isExportCommand(parsed.command)) {
      const { file, key, state } = parsed.command;
      const report = await ArchiveVerifier.verifyFile(file, key, state ? await verificationState.read(state) : null);
      if (state) await verificationState.keep(state, report);
      io.out(json ? `${JSON.stringify(report, null, 2)}\n` : verification(report));
      return report.findings.length > 0 ? EXIT.FINDINGS : EXIT.OK;
    }
    loadEnvFile();
    // Which database, which migrations: for a person; with --json stderr carries a failure only.
    const notice = json ? () => undefined : (line: string) => io.err(`${line}\n`);
    const database = await openOperatorDatabase(loadConfig(process.env), notice, { create: mayCreateDatabase(parsed.command) });
    try {
      const outcome = await execute(parsed.command, database.services);
      io.out(json ? `${JSON.stringify(outcome.body, null, 2)}\n` : outcome.text);
      if (!json && outcome.hint) io.err(`${outcome.hint}\n`);
      await database.services.announcer.settled();
      if (!json && database.services.announcer.failure) {
        io.err('warning: the gateway could not be told at once; its instances find the change at their next poll (OUTBOUND_WEBHOOKS_POLL_SECONDS)\n');
      }
      return outcome.exitCode ?? EXIT.OK;
    } finally {
      await database.close();
    }
  } catch (error) {
    const failure = classify(error);
    if (json) {
      io.err(`${JSON.stringify(problemOf(failure))}\n`);
    } else {
      io.err(`${messageOf(failure)}\n`);
      if (error instanceof UsageError && error.help) io.err(`${error.help}\n`);
    }
    return exitCodeOf(failure);
  }
}

void main(process.argv.slice(2)).then((code) => {
  if (process.exitCode === undefined || process.exitCode === EXIT.OK) process.exitCode = code;
});
