import { defineConfig } from "vitest/config"

/** `.ci/run`'s self-check runs only the fixture that fails on purpose, through this same configuration. */
const selfCheck = process.env["SYLLABUS_SELF_CHECK"] === "1"
/** Where `.ci/run` asks for vitest's JSON report, from which it prints the run's closing line. */
const jsonReport = process.env["SYLLABUS_TEST_REPORT"]

export default defineConfig({
  test: {
    include: selfCheck ? ["test/self-check/*.fixture.ts"] : ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    globalSetup: ["test/support/database.ts"],
    reporters: jsonReport ? ["default", "json"] : ["default"],
    ...(jsonReport ? { outputFile: { json: jsonReport } } : {})
  }
})
