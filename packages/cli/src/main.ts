#!/usr/bin/env node
/** `syllabus …`: the command-line client; its `bin` is the build of this file (dist/main.js). In the workspace, from sources: `node --import tsx packages/cli/src/main.ts`. */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { run } from "./index.js"

NodeRuntime.runMain(
  Effect.flatMap(run(process.argv.slice(2), process.env), (code) => Effect.sync(() => void (process.exitCode = code))),
  {
    disableErrorReporting: true,
    // Ctrl-C (SIGINT) or SIGTERM interrupts the command; once its clean-up has run
    // (`events tail` and `listen` delete their stream), exit 130 as shells expect.
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) ? 0 : Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
  }
)
