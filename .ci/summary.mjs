// Reads vitest's JSON report and prints the run's closing line, `N passed, N failed, N skipped`.
// Exits non-zero when the report is missing, unreadable, or shows any failure (a failed test,
// or a test file that failed before its tests ran). With `--expect-self-check` it instead
// requires the self-check fixture's exact outcome: one passed and one failed.
import { readFileSync } from "node:fs"

const [path, mode] = process.argv.slice(2)
let report
try {
  report = JSON.parse(readFileSync(path, "utf8"))
} catch (error) {
  console.error(`no readable test report at ${path}: ${error.message}`)
  process.exit(1)
}
const passed = report.numPassedTests ?? 0
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0)
// A file that failed to load has no failed test of its own: count it as one failure.
const brokenFiles = (report.testResults ?? []).filter((file) => file.status === "failed" && !(file.assertionResults ?? []).some((t) => t.status === "failed")).length
const failed = (report.numFailedTests ?? 0) + brokenFiles

if (mode === "--expect-self-check") {
  if (passed === 1 && failed === 1) process.exit(0)
  console.error(`self-check: expected 1 passed and 1 failed, the report says ${passed} passed, ${failed} failed`)
  process.exit(1)
}
if (report.success === false && failed === 0) console.log("the runner reported errors outside any test (see above): the run fails")
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`)
process.exit(failed > 0 || report.success === false ? 1 : 0)
