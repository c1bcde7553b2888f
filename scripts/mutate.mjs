/**
 * Mutation testing of a rule-bearing area of the core: `pnpm mutate <area>` (or
 * `<area>/<file>.ts` for one file of it). StrykerJS changes the area's code one mutant at a
 * time (`<` for `<=`, a condition always true, a string emptied...) and runs the tests that
 * cover it; a mutant no test notices is a rule the tests would let slip. Not part of
 * `pnpm test` nor of CI: a run takes minutes to an hour. docs/mutation-testing.md has the
 * figures and the survivors left on purpose.
 *
 * Runs in Stryker's sandbox (a copy under .stryker-tmp/, never the sources themselves), on the
 * memory store only (`SYLLABUS_TEST_STORES`), with the tests named below for the area.
 * Reports: reports/mutation/<area>.html and .json. `STRYKER_CONCURRENCY` (default 2).
 */
import { Stryker } from "@stryker-mutator/core"
import { fileURLToPath } from "node:url"

const contract = (...names) => names.map((name) => `test/contract/${name}.test.ts`)
const unit = (...names) => names.map((name) => `packages/core/test/${name}.test.ts`)

/** Per area, the tests that exercise it: the core's unit tests and the area's contract files. */
const areas = {
  limits: [...unit("rate-limit", "plan-limits"), ...contract("plan-limits", "platform")],
  mail: [...unit("messages"), ...contract("email", "email-restart", "tickets")],
  learning: [
    ...unit("certificates", "gamification"),
    ...contract("enrollments", "progress", "release-rules", "exams", "exam-attempts", "exam-questions", "certificates", "certificate-template", "gamification", "rewards")
  ],
  sales: contract("deliveries", "delivery-tag-applications", "funnels", "gateways", "sales-events", "sales-settings", "sale-end-to-end"),
  bulk: contract("exports", "imports", "configuration-plans", "bounded-work"),
  access: [...unit("auth", "totp"), ...contract("credentials", "scope", "oauth", "people")]
}

/** One file of an area, with the tests that exercise that file when they are fewer than the area's. */
const files = {
  "limits/rate-limit.ts": unit("rate-limit"),
  "limits/plan-limits.ts": [...unit("plan-limits"), ...contract("plan-limits")],
  "mail/bounces.ts": contract("email"),
  "mail/access-emails.ts": contract("email"),
  "mail/ticket-notifications.ts": contract("email"),
  "learning/enrollments.ts": contract("enrollments"),
  "learning/progress.ts": contract("progress", "release-rules"),
  "learning/release-rules.ts": contract("release-rules"),
  "learning/exam-attempts.ts": contract("exam-attempts"),
  "learning/rewards.ts": contract("rewards"),
  "sales/deliveries.ts": contract("deliveries"),
  "sales/tag-applications.ts": contract("delivery-tag-applications"),
  // Formula neutralization and its reading back are tested with the hostile files.
  "bulk/csv.ts": contract("exports", "bounded-work"),
  // The CSV options are tested with the hostile files, the files' scope with the scope of a credential.
  "bulk/exports.ts": contract("exports", "bounded-work", "scope"),
  // Certificate documents are read under an `anyOf` requirement (their certificate, product or learner).
  "access/scope.ts": contract("scope", "certificates"),
  "access/credentials.ts": [...unit("auth"), ...contract("credentials")]
}

// `<area>/<file>.ts:10-20` mutates those lines only (to check that a new test kills their mutants).
const [target = "", lines] = (process.argv[2] ?? "").split(":")
const area = target.split("/")[0]
if (!(area in areas)) {
  console.error(`usage: pnpm mutate <area>[/<file>.ts[:<from>-<to>]]; areas: ${Object.keys(areas).join(", ")}`)
  process.exit(2)
}
const mutate = target.includes("/") ? `packages/core/src/${target}${lines === undefined ? "" : `:${lines}`}` : `packages/core/src/${area}/**/*.ts`
const name = target.replace(/\.ts$/, "").replaceAll("/", "-") + (lines === undefined ? "" : `-${lines}`)

process.env["SYLLABUS_TEST_STORES"] = "memory"
process.env["SYLLABUS_MUTATE_TESTS"] = (files[target] ?? areas[area]).join(",")

const stryker = new Stryker({
  mutate: [mutate],
  testRunner: "vitest",
  plugins: [fileURLToPath(import.meta.resolve("@stryker-mutator/vitest-runner"))],
  vitest: { configFile: "scripts/mutate.vitest.config.mjs", related: false },
  coverageAnalysis: "perTest",
  concurrency: Number(process.env["STRYKER_CONCURRENCY"] ?? 2),
  // A contract test's run is dominated by its server's start; a mutant that loops is stopped.
  timeoutMS: 20_000,
  timeoutFactor: 2,
  tempDirName: ".stryker-tmp",
  cleanTempDir: true,
  ignorePatterns: ["/bench/results", "/reports", "**/dist", "/.syllabus"],
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  thresholds: { high: 80, low: 60, break: null },
  logLevel: process.env["STRYKER_LOG_LEVEL"] ?? "info"
})
await stryker.runMutationTest()
