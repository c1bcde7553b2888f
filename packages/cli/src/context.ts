/**
 * What a run of the CLI is given from outside: the environment variables and the terminal
 * (output streams and a way to open a browser). `main.ts` passes the real ones; tests pass
 * their own, so a test runs the very program a user runs.
 */
import { Context, Data, Effect } from "effect"
import { spawn } from "node:child_process"

export interface Io {
  /** Standard output: results (tables, JSON). */
  readonly out: (text: string) => void
  /** Standard error: messages for the person (instructions, progress, errors). */
  readonly err: (text: string) => void
  /** Try to open `url` in the user's browser; failing is fine (the URL is printed too). */
  readonly openBrowser: (url: string) => void
  /** Standard error is a terminal (a person watches it): progress may redraw one line. Default: no. */
  readonly stderrIsTerminal?: boolean
}

export type Env = Readonly<Record<string, string | undefined>>

export class CliContext extends Context.Tag("@syllabus/cli/CliContext")<
  CliContext,
  { readonly env: Env; readonly io: Io }
>() {}

/** A failure the user sees as `code: message`, and the process exits non-zero. */
export class CliError extends Data.TaggedError("CliError")<{ readonly code: string; readonly message: string }> {}

export const out = (text: string) => Effect.flatMap(CliContext, ({ io }) => Effect.sync(() => io.out(text)))
export const err = (text: string) => Effect.flatMap(CliContext, ({ io }) => Effect.sync(() => io.err(text)))

const browserCommand = (url: string): [string, Array<string>] =>
  process.platform === "darwin"
    ? ["open", [url]]
    : process.platform === "win32"
      ? ["cmd", ["/c", "start", "", url]]
      : ["xdg-open", [url]]

export const processIo: Io = {
  stderrIsTerminal: process.stderr.isTTY === true,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  openBrowser: (url) => {
    const [command, args] = browserCommand(url)
    try {
      const child = spawn(command, args, { stdio: "ignore", detached: true })
      child.on("error", () => undefined)
      child.unref()
    } catch {
      // No browser here: the printed URL is enough.
    }
  }
}
