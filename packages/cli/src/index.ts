/**
 * The CLI as a program: `run(argv, env, io)` parses `argv` (the arguments after the
 * executable), runs the command and answers the exit code. Failures print
 * `error.code: message` on stderr. Everything @effect/cli prints (help, usage errors) goes
 * to `io` too, without colour codes unless the stream is a terminal and `NO_COLOR` is unset.
 */
import * as Command from "@effect/cli/Command"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { syllabus } from "./commands.js"
import { CliContext, CliError, type Env, type Io, processIo, runConsole } from "./context.js"

export { CliError, type Env, type Io } from "./context.js"

const cli = Command.run(syllabus, { name: "syllabus", version: "0.1.0" })

/** What @effect/cli and the configuration files need of the platform, and no more (no child processes, no workers). */
const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer)

const describe = (error: unknown): Option.Option<CliError> => {
  if (error instanceof CliError) return Option.some(error)
  // Parse errors: @effect/cli has printed the usage already.
  if (ValidationError.isValidationError(error)) return Option.none()
  const message = error instanceof Error ? error.message : String(error)
  return Option.some(new CliError({ code: "io_error", message }))
}

export const run = (argv: ReadonlyArray<string>, env: Env, io: Io = processIo): Effect.Effect<number> =>
  cli(["node", "syllabus", ...argv]).pipe(
    Effect.as(0),
    Effect.catchAllCause((cause) =>
      Effect.sync(() => {
        if (Cause.isInterruptedOnly(cause)) return 130
        const failure = Cause.failureOption(cause)
        const error = Option.isSome(failure) ? describe(failure.value) : Option.some(new CliError({ code: "internal_error", message: Cause.pretty(cause) }))
        if (Option.isSome(error)) io.err(`${error.value.code}: ${error.value.message}\n`)
        return 1
      })
    ),
    Effect.provide(platform),
    Effect.withConsole(runConsole(io, env)),
    Effect.provideService(CliContext, { env, io })
  )
