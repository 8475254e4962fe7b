// Adds up the Jest --json result files of every run (.ci/run: Node 20 embedded and server, Node 24)
// into the one closing line CI reads: "tests: N passed, N failed".
import { readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of process.argv.slice(2)) {
  const result = JSON.parse(readFileSync(file, 'utf8'));
  passed += result.numPassedTests;
  failed += result.numFailedTests + result.numRuntimeErrorTestSuites;
  skipped += result.numPendingTests + result.numTodoTests;
  console.log(`${file}: ${result.numPassedTests} passed, ${result.numFailedTests} failed in ${result.numTotalTestSuites} suites`);
}
console.log(`tests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
