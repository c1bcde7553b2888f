#!/usr/bin/env -S node --import tsx
/** `syllabus …`: the command-line client (run with `node --import tsx packages/cli/src/main.ts`). */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect } from "effect"
import { run } from "./index.js"

NodeRuntime.runMain(
  Effect.flatMap(run(process.argv.slice(2), process.env), (code) => Effect.sync(() => void (process.exitCode = code))),
  { disableErrorReporting: true }
)
